/*
 * lease_file.cpp
 *	  $PGDATA/snowflake.lease_state (see lease_table.hpp for what it holds
 *	  and why it is safe).
 *
 * One 512-byte block per worker id (block n at offset 512 n), written in
 * place: a sector is written whole or not at all, and each block carries a
 * CRC.  Block 0 is the header.  Every block the header counts was written
 * whole before the header counted it: a new file is made under a temporary
 * name and renamed; a file grows by empty blocks, fsynced, before the header
 * that counts them.  A block beyond the count is what an interrupted growth
 * left, and is written again.  The blocks of the lease space are allocated
 * at start, so a change overwrites allocated space and never runs out of
 * disk.  Plain POSIX I/O: the postmaster runs this, where fd.c may not be
 * usable.
 */
extern "C"
{
#include "postgres.h"

#include "access/xlog.h"		/* BACKUP_LABEL_FILE */
#include "access/xlog_internal.h"	/* STANDBY_SIGNAL_FILE, RECOVERY_SIGNAL_FILE */
#include "common/file_perm.h"	/* pg_file_create_mode */
#include "miscadmin.h"			/* DataDir, IsBinaryUpgrade */
#include "storage/fd.h"			/* pg_fsync */
}

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pg/durable_file.hpp"
#include "pg/leases/lease_file.hpp"
#include "pg/settings.hpp"

static const char *kLeaseFileHint =
	"Restore snowflake.lease_state from a backup of this data directory.  Otherwise, "
	"stop every application that holds a worker-id lease of this server, then remove "
	"the file: the server forgets every lease and its history, leases worker ids again "
	"from this run's generation floor, and numbers tokens anew, so a holder "
	"still running would share its worker id with the next holder.";

static const char *kBootIdPath = "/proc/sys/kernel/random/boot_id";

/* Version 1.5's header. */
struct LeaseFileHeaderV15
{
	uint32		magic;			/* kLeaseHeaderMagicV15 */
	uint32		clean;
	pg_crc32c	crc;
};

pg_crc32c
LeaseImageCrc(const LeaseImage &image)
{
	pg_crc32c	crc;

	INIT_CRC32C(crc);
	COMP_CRC32C(crc, &image, offsetof(LeaseImage, crc));
	FIN_CRC32C(crc);
	return crc;
}

template <typename Header>
static pg_crc32c
HeaderCrc(const Header &header)
{
	pg_crc32c	crc;

	INIT_CRC32C(crc);
	COMP_CRC32C(crc, &header, offsetof(Header, crc));
	FIN_CRC32C(crc);
	return crc;
}

static bool
AllZeros(const char *block)
{
	for (int i = 0; i < kLeaseBlockSize; i++)
		if (block[i] != 0)
			return false;
	return true;
}

/* The block of worker id "worker_id" before any lease: zeros but for these. */
static void
EmptyBlock(uint32 worker_id, char *block)
{
	LeaseImage	image;

	memset(&image, 0, sizeof(image));
	image.magic = kLeaseEmptyMagic;
	image.worker_id = worker_id;
	image.crc = LeaseImageCrc(image);
	memset(block, 0, kLeaseBlockSize);
	memcpy(block, &image, sizeof(image));
}

/* This boot of the machine, zero-padded; "" where the kernel does not say. */
static void
ReadBootId(char *boot_id)
{
	memset(boot_id, 0, kBootIdSize);

	int			fd = open(kBootIdPath, O_RDONLY, 0);

	if (fd < 0)
		return;

	ssize_t		got = read(fd, boot_id, kBootIdSize - 1);

	close(fd);
	if (got <= 0)
		got = 0;
	while (got > 0 && (boot_id[got - 1] == '\n' || boot_id[got - 1] == '\0'))
		got--;
	memset(boot_id + got, 0, kBootIdSize - got);
}

[[noreturn]] static void
FailOn(int fd, const char *what, const char *path)
{
	int			saved_errno = errno;

	if (fd >= 0)
		close(fd);
	errno = saved_errno;
	ereport(FATAL,
			(errcode_for_file_access(),
			 errmsg("could not %s file \"%s\": %m", what, path)));
	pg_unreachable();
}

[[noreturn]] static void
ReportDamage(int fd, const char *path, const char *detail)
{
	if (fd >= 0)
		close(fd);
	ReportCorruptStateFile(path, "lease state", detail, kLeaseFileHint);
}

/* Reads block n; false at the end of the file or of a partial block. */
static bool
ReadBlock(int fd, const char *path, uint32 n, char *block)
{
	ssize_t got = pread(fd, block, kLeaseBlockSize,
						static_cast<off_t>(n) * kLeaseBlockSize);

	if (got < 0)
		FailOn(fd, "read", path);
	return got == kLeaseBlockSize;
}

static void
WriteBlock(int fd, const char *path, uint32 n, const char *block)
{
	if (pwrite(fd, block, kLeaseBlockSize, static_cast<off_t>(n) * kLeaseBlockSize) !=
		kLeaseBlockSize)
	{
		if (errno == 0)
			errno = ENOSPC;
		FailOn(fd, "write", path);
	}
}

/*
 * FATAL unless block n is a lease image or an empty block of worker id n;
 * returns the image.
 */
static LeaseImage
CheckBlock(int fd, const char *path, const char *block, uint32 n)
{
	char		detail[kStateProblemSize];
	LeaseImage	image;

	memcpy(&image, block, sizeof(image));
	if (AllZeros(block))
		snprintf(detail, sizeof(detail),
				 "Block %u, the lease state of worker id %u, holds only zeros.", n, n);
	else if (image.magic != kLeaseImageMagic && image.magic != kLeaseEmptyMagic)
		snprintf(detail, sizeof(detail),
				 "Block %u, the lease state of worker id %u, does not start with a lease "
				 "image.",
				 n, n);
	else if (image.crc != LeaseImageCrc(image))
		snprintf(detail, sizeof(detail),
				 "The checksum of block %u, the lease state of worker id %u, is wrong.", n,
				 n);
	else if (image.worker_id != n)
		snprintf(detail, sizeof(detail), "Block %u holds worker id %u.", n,
				 image.worker_id);
	else
		return image;
	ReportDamage(fd, path, detail);
}

/* Makes the file's creation durable. */
static void
FsyncDataDirectory(void)
{
	int			fd = open(DataDir, O_RDONLY | PG_BINARY, 0);

	if (fd < 0 || pg_fsync(fd) != 0)
		ereport(FATAL,
				(errcode_for_file_access(),
				 errmsg("could not fsync directory \"%s\": %m", DataDir)));
	close(fd);
}

bool
WriteLeaseHeader(int fd, const LeaseTable *table, bool clean)
{
	alignas(8) char block[kLeaseBlockSize];
	LeaseFileHeader header;

	memset(&header, 0, sizeof(header));
	header.magic = kLeaseHeaderMagic;
	header.clean = clean ? 1 : 0;
	header.settle = table->needs_bump && !table->settled ? 1 : 0;
	header.blocks = table->file_blocks;
	header.last_token = table->last_token;
	header.last_change = table->last_change;
	memcpy(header.boot_id, table->boot_id, kBootIdSize);
	header.crc = HeaderCrc(header);
	memset(block, 0, sizeof(block));
	memcpy(block, &header, sizeof(header));
	errno = 0;
	return pwrite(fd, block, kLeaseBlockSize, 0) == kLeaseBlockSize;
}

void
MarkLeaseFileClean(const LeaseTable *table)
{
	char		path[MAXPGPATH];

	/* The path fit at start (LoadLeaseFile), so this raises no error. */
	DataDirectoryFile(kLeaseStateFileName, path);

	int			fd = open(path, O_RDWR | PG_BINARY, 0);

	if (fd < 0)
		return;
	/* On failure the header keeps saying "not clean", which is safe. */
	if (pg_fsync(fd) != 0 || !WriteLeaseHeader(fd, table, true) || pg_fsync(fd) != 0)
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("could not mark file \"%s\" as cleanly shut down: %m", path)));
	close(fd);
}

/*
 * Makes a new file of "blocks" blocks, all empty, under a temporary name
 * renamed over "path": an interrupted creation leaves no file.  Its header
 * says clean: there is nothing to settle.
 */
static void
CreateLeaseFile(const char *path, LeaseTable *table, uint32 blocks)
{
	char		temporary[MAXPGPATH];
	alignas(8) char block[kLeaseBlockSize];

	if (snprintf(temporary, sizeof(temporary), "%s.tmp", path) >= MAXPGPATH)
	{
		errno = ENAMETOOLONG;
		FailOn(-1, "create", temporary);
	}

	int			fd = open(temporary, O_RDWR | O_CREAT | O_TRUNC | PG_BINARY, pg_file_create_mode);

	if (fd < 0)
		FailOn(fd, "create", temporary);
	for (uint32 n = 1; n < blocks; n++)
	{
		EmptyBlock(n, block);
		WriteBlock(fd, temporary, n, block);
	}
	table->file_blocks = blocks;
	if (!WriteLeaseHeader(fd, table, true))
		FailOn(fd, "write", temporary);
	if (pg_fsync(fd) != 0)
		FailOn(fd, "fsync", temporary);
	close(fd);
	if (rename(temporary, path) != 0)
		FailOn(-1, "rename", temporary);
	FsyncDataDirectory();
}

/* A standby, a point-in-time recovery, or a restored backup starts. */
static bool
RecoveryOrBackupStarts(void)
{
	struct stat st;

	return stat(STANDBY_SIGNAL_FILE, &st) == 0 || stat(RECOVERY_SIGNAL_FILE, &st) == 0 ||
		stat(BACKUP_LABEL_FILE, &st) == 0;
}

/*
 * Reads block 0: the header of this version, or version 1.5's (then *v15
 * is set, and only magic and clean are filled in).  FATAL on anything else.
 */
static LeaseFileHeader
ReadHeader(int fd, const char *path, bool *v15)
{
	alignas(8) char block[kLeaseBlockSize];
	LeaseFileHeader header;
	LeaseFileHeaderV15 old;

	if (!ReadBlock(fd, path, 0, block))
		ReportDamage(fd, path, "The file is shorter than its header (block 0).");
	memcpy(&header, block, sizeof(header));
	memcpy(&old, block, sizeof(old));
	*v15 = false;
	if (header.magic == kLeaseHeaderMagic && header.crc == HeaderCrc(header) &&
		header.blocks >= 1 && header.boot_id[kBootIdSize - 1] == '\0')
		return header;
	if (old.magic == kLeaseHeaderMagicV15 && old.crc == HeaderCrc(old))
	{
		*v15 = true;
		memset(&header, 0, sizeof(header));
		header.magic = old.magic;
		header.clean = old.clean;
		return header;
	}
	if (AllZeros(block))
		ReportDamage(fd, path, "Its header (block 0) holds only zeros.");
	if (header.magic == kLeaseHeaderMagic || old.magic == kLeaseHeaderMagicV15)
		ReportDamage(fd, path, "The checksum of its header (block 0) is wrong.");
	ReportDamage(fd, path, "Block 0 does not start with a lease state header.");
}

/*
 * Opens the file, making it first if it is missing or empty (an empty file
 * is what pg_upgrade's hint has a cluster without leases make), and sets
 * *st; -1 in a binary upgrade without the file.
 */
static int
OpenLeaseFile(const char *path, LeaseTable *table, struct stat *st)
{
	const uint32 end = table->first_worker_id + table->count;
	int			fd = open(path, O_RDWR | PG_BINARY, 0);

	if (fd < 0 && errno == ENOENT && IsBinaryUpgrade)
	{
		/*
		 * pg_upgrade's start leases nothing, and leaves the file to be
		 * carried from the old data directory (data_directory.cpp).
		 */
		return -1;
	}
	if (fd < 0 && errno != ENOENT)
		FailOn(fd, "open", path);
	if (fd >= 0 && fstat(fd, st) != 0)
		FailOn(fd, "stat", path);
	if (fd < 0 || st->st_size == 0)
	{
		if (fd >= 0)
			close(fd);
		CreateLeaseFile(path, table, Max(end, 1U));
		fd = open(path, O_RDWR | PG_BINARY, 0);
		if (fd < 0 || fstat(fd, st) != 0)
			FailOn(fd, "open", path);
	}
	return fd;
}

/*
 * The header, with the number of blocks it counts (version 1.5: the
 * file's); FATAL if the size does not fit it.
 */
static LeaseFileHeader
ReadSizedHeader(int fd, const char *path, const struct stat &st, bool *v15)
{
	LeaseFileHeader header = ReadHeader(fd, path, v15);

	/* Every write is of whole blocks, growth included. */
	if (st.st_size % kLeaseBlockSize != 0)
		ReportDamage(fd, path, "Its size is not a multiple of 512 bytes.");
	if (*v15)
		header.blocks = static_cast<uint32>(st.st_size / kLeaseBlockSize);
	else if (st.st_size < static_cast<off_t>(header.blocks) * kLeaseBlockSize)
	{
		char		detail[kStateProblemSize];

		snprintf(detail, sizeof(detail),
				 "It holds %lld bytes, fewer than the %u blocks of 512 bytes its header "
				 "counts.",
				 static_cast<long long>(st.st_size), header.blocks);
		ReportDamage(fd, path, detail);
	}
	return header;
}

/*
 * Reads every block the header counts into "table".  Images of another
 * layout or node id are history that no longer matters (the layout check
 * keeps new IDs above them), but their tokens count.  Returns whether a
 * version 1.5 file has zero blocks (ids never leased).
 */
static bool
ReadLeaseBlocks(int fd, const char *path, LeaseTable *table, const LeaseFileHeader &header,
				bool v15)
{
	alignas(8) char block[kLeaseBlockSize];
	const uint32 end = table->first_worker_id + table->count;
	bool		zero_blocks = false;

	for (uint32 n = 1; n < header.blocks; n++)
	{
		if (!ReadBlock(fd, path, n, block))
			ReportDamage(fd, path, "The file ends inside a block.");
		if (v15 && reinterpret_cast<const LeaseImage *>(block)->magic == 0)
		{
			zero_blocks = true; /* version 1.5: never written */
			continue;
		}

		LeaseImage	image = CheckBlock(fd, path, block, n);

		if (image.magic == kLeaseEmptyMagic)
			continue;
		table->last_token = Max(table->last_token, image.token);
		table->last_change = Max(table->last_change, image.change);
		if (n >= table->first_worker_id && n < end &&
			LeaseImageMadeUnder(image, g_settings.layout, g_settings.node_id))
			table->entries[n - table->first_worker_id].image = image;
	}
	table->last_token = Max(table->last_token, header.last_token);
	table->last_change = Max(table->last_change, header.last_change);
	return zero_blocks;
}

/*
 * Version 1.5's zero blocks become empty images, and the file grows to the
 * lease space (over what an interrupted growth left), all made durable
 * before the header that counts them.  Returns the file's blocks.
 */
static uint32
CompleteLeaseBlocks(int fd, const char *path, const LeaseTable *table,
					const LeaseFileHeader &header, const struct stat &st, bool zero_blocks)
{
	alignas(8) char block[kLeaseBlockSize];
	const uint32 blocks = Max(header.blocks, table->first_worker_id + table->count);
	bool		wrote = false;

	for (uint32 n = 1; zero_blocks && n < header.blocks; n++)
		if (ReadBlock(fd, path, n, block) &&
			reinterpret_cast<const LeaseImage *>(block)->magic == 0)
		{
			EmptyBlock(n, block);
			WriteBlock(fd, path, n, block);
			wrote = true;
		}
	for (uint32 n = header.blocks; n < blocks; n++)
	{
		EmptyBlock(n, block);
		WriteBlock(fd, path, n, block);
		wrote = true;
	}
	if (st.st_size > static_cast<off_t>(blocks) * kLeaseBlockSize)
	{
		if (ftruncate(fd, static_cast<off_t>(blocks) * kLeaseBlockSize) != 0)
			FailOn(fd, "truncate", path);
		wrote = true;
	}
	if (wrote && pg_fsync(fd) != 0)
		FailOn(fd, "fsync", path);
	return blocks;
}

void
LoadLeaseFile(LeaseTable *table)
{
	char		path[MAXPGPATH];
	struct stat st;

	DataDirectoryFile(kLeaseStateFileName, path);
	ReadBootId(table->boot_id);

	int			fd = OpenLeaseFile(path, table, &st);

	if (fd < 0)
		return;

	bool		v15;
	LeaseFileHeader header = ReadSizedHeader(fd, path, st, &v15);
	bool		zero_blocks = ReadLeaseBlocks(fd, path, table, header, v15);

	table->file_blocks = CompleteLeaseBlocks(fd, path, table, header, st, zero_blocks);

	/*
	 * Whether the first change settles (lease_table.hpp).  Version 1.5
	 * recorded no boot id.
	 */
	const bool same_boot = !v15 && table->boot_id[0] != '\0' &&
		memcmp(header.boot_id, table->boot_id, kBootIdSize) == 0;

	table->needs_bump = header.settle == 1 || (header.clean != 1 && !same_boot) ||
		RecoveryOrBackupStarts();

	/* From now on, a crash is not a clean shutdown. */
	if (!WriteLeaseHeader(fd, table, false))
		FailOn(fd, "write", path);
	if (pg_fsync(fd) != 0)
		FailOn(fd, "fsync", path);
	close(fd);
	if (v15)
		ereport(LOG,
				(errmsg("rewrote file \"%s\" of snowflake 1.5 in the current format",
						path)));
}
