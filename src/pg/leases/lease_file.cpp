/*
 * lease_file.cpp
 *	  $PGDATA/snowflake.lease_state (what it holds and why it is safe:
 *	  lease_table.hpp).
 *
 * Block n (512 bytes, with a CRC) at offset 512 n, written in place: a
 * sector is written whole or not at all.  Block 0 is the header.  Every
 * block the header counts was written before it counted it: a new file is
 * made under a temporary name and renamed; a file grows by empty blocks,
 * fsynced before the header.  A block beyond the count (an interrupted
 * growth) is written again.  The blocks are allocated at start, so a
 * change never runs out of disk.  Plain POSIX I/O: the postmaster runs
 * this, where fd.c may not be usable.
 */
extern "C"
{
#include "postgres.h"

#include "access/xlog.h"		/* BACKUP_LABEL_FILE */
#include "access/xlog_internal.h"	/* STANDBY_SIGNAL_FILE, RECOVERY_SIGNAL_FILE */
#include "common/file_perm.h"	/* pg_file_create_mode */
#include "miscadmin.h"			/* DataDir */
#include "lib/stringinfo.h"
#include "storage/fd.h"			/* pg_fsync */
#include "utils/timestamp.h"    /* timestamptz_to_str */
}

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/reach_ahead.hpp"
#include "pg/clock.hpp"
#include "pg/clock_watch.hpp"
#include "pg/durable_file.hpp"
#include "pg/leases/lease_file.hpp"
#include "pg/settings.hpp"
#include "pg/timestamps.hpp"

static const char *kLeaseFileHint =
	"Restore snowflake.lease_state from a backup of this data directory.  Otherwise, "
	"stop every application that holds a worker-id lease of this server, then remove "
	"the file: the server forgets every lease and its history, leases worker ids again "
	"from this run's generation floor, and numbers tokens anew, so a holder "
	"still running would share its worker id with the next holder.";

static const char *kBootIdPath = "/proc/sys/kernel/random/boot_id";

/* How many leases a refusal names; it counts the others. */
static constexpr int kLeasesNamed = 5;

/*
 * An empty file is a new data directory's (set in _PG_init, before the
 * pg_upgrade guard removes its marker; see NoteLeaseFileStart()).
 */
static bool empty_file_is_new = false;

/* The CRC of a block's struct, up to its crc field. */
template <typename Block>
static pg_crc32c
HeaderCrc(const Block &block)
{
	pg_crc32c	crc;

	INIT_CRC32C(crc);
	COMP_CRC32C(crc, &block, offsetof(Block, crc));
	FIN_CRC32C(crc);
	return crc;
}

pg_crc32c
LeaseImageCrc(const LeaseImage &image)
{
	return HeaderCrc(image);
}

static bool
AllZeros(const char *block)
{
	for (int i = 0; i < kLeaseBlockSize; i++)
		if (block[i] != 0)
			return false;
	return true;
}

LeaseImage
EmptyLeaseImage(uint32 worker_id)
{
	LeaseImage	image;

	memset(&image, 0, sizeof(image));
	image.magic = kLeaseEmptyMagic;
	image.worker_id = worker_id;
	image.crc = LeaseImageCrc(image);
	return image;
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

bool
WriteLeaseBlock(int fd, uint32 n, const void *data, size_t size)
{
	alignas(8) char block[kLeaseBlockSize];

	memset(block, 0, kLeaseBlockSize);
	memcpy(block, data, size);
	/* A short write sets no errno: report it as a full disk, as PostgreSQL does. */
	errno = 0;
	if (pwrite(fd, block, kLeaseBlockSize, static_cast<off_t>(n) * kLeaseBlockSize) ==
		kLeaseBlockSize)
		return true;
	if (errno == 0)
		errno = ENOSPC;
	return false;
}

/* Writes block n as the empty image of worker id n. */
static void
WriteEmptyBlock(int fd, const char *path, uint32 n)
{
	const LeaseImage image = EmptyLeaseImage(n);

	if (!WriteLeaseBlock(fd, n, &image, sizeof(image)))
		FailOn(fd, "write", path);
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
	LeaseFileHeader header;

	memset(&header, 0, sizeof(header));
	header.magic = kLeaseHeaderMagic;
	header.clean = clean ? 1 : 0;
	header.settle = table->needs_bump && !table->settled ? 1 : 0;
	header.blocks = table->file_blocks;
	header.node_id = g_settings.node_id;
	header.last_token = table->last_token;
	header.last_change = table->last_change;
	memcpy(header.boot_id, table->boot_id, kBootIdSize);
	header.crc = HeaderCrc(header);
	errno = 0;
	return WriteLeaseBlock(fd, 0, &header, sizeof(header));
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

	if (snprintf(temporary, sizeof(temporary), "%s.tmp", path) >= MAXPGPATH)
	{
		errno = ENAMETOOLONG;
		FailOn(-1, "create", temporary);
	}

	int			fd = open(temporary, O_RDWR | O_CREAT | O_TRUNC | PG_BINARY, pg_file_create_mode);

	if (fd < 0)
		FailOn(fd, "create", temporary);
	for (uint32 n = 1; n < blocks; n++)
		WriteEmptyBlock(fd, temporary, n);
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
 * Opens the file and sets *st, making it first if it is missing, or empty
 * in a new data directory (as pg_upgrade's hint has a cluster without
 * leases make it).  An empty file anywhere else is damage: a copy that ran
 * out of disk, a truncation.  A binary upgrade leases nothing: no call.
 */
static int
OpenLeaseFile(const char *path, LeaseTable *table, struct stat *st)
{
	const uint32 end = table->first_worker_id + table->count;
	int			fd = open(path, O_RDWR | PG_BINARY, 0);

	if (fd < 0 && errno != ENOENT)
		FailOn(fd, "open", path);
	if (fd >= 0 && fstat(fd, st) != 0)
		FailOn(fd, "stat", path);
	if (fd >= 0 && st->st_size == 0 && !empty_file_is_new && !DataDirectoryIsNew())
		ReportDamage(fd, path,
					 "The file is empty, in a data directory that snowflake ran in "
					 "before.");
	if (fd < 0 || st->st_size == 0)
	{
		if (fd >= 0)
			close(fd);
		if (!DataDirectoryIsNew())
			ereport(LOG,
					(errmsg("snowflake created file \"%s\": no lease is known", path)));
		CreateLeaseFile(path, table, Max(end, 1U));
		fd = open(path, O_RDWR | PG_BINARY, 0);
		if (fd < 0 || fstat(fd, st) != 0)
			FailOn(fd, "open", path);
	}
	return fd;
}

/* Reads block 0, the header; FATAL unless it is valid and the file's size fits it. */
static LeaseFileHeader
ReadHeader(int fd, const char *path, const struct stat &st)
{
	alignas(8) char block[kLeaseBlockSize];
	LeaseFileHeader header;

	if (!ReadBlock(fd, path, 0, block))
		ReportDamage(fd, path, "The file is shorter than its header (block 0).");
	memcpy(&header, block, sizeof(header));
	if (header.magic != kLeaseHeaderMagic || header.crc != HeaderCrc(header) ||
		header.blocks < 1 || header.boot_id[kBootIdSize - 1] != '\0')
	{
		if (AllZeros(block))
			ReportDamage(fd, path, "Its header (block 0) holds only zeros.");
		if (header.magic == kLeaseHeaderMagic)
			ReportDamage(fd, path, "The checksum of its header (block 0) is wrong.");
		ReportDamage(fd, path, "Block 0 does not start with a lease state header.");
	}
	/* Every write is of whole blocks, growth included. */
	if (st.st_size % kLeaseBlockSize != 0)
		ReportDamage(fd, path, "Its size is not a multiple of 512 bytes.");
	if (st.st_size < static_cast<off_t>(header.blocks) * kLeaseBlockSize)
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

/* Leases that may still issue IDs and stop the start, as a refusal names them. */
struct LiveLeases
{
	int count;
	uint32 lowest_worker_id;
	int64 until_ms; /* the last of them */
	StringInfoData names;
};

static void
NoteLiveLease(LiveLeases *live, const LeaseImage &image, int64 until_ms)
{
	if (live->count == 0)
	{
		initStringInfo(&live->names);
		live->lowest_worker_id = image.worker_id;
	}
	live->lowest_worker_id = Min(live->lowest_worker_id, image.worker_id);
	live->until_ms = Max(live->until_ms, until_ms);
	if (live->count++ < kLeasesNamed)
		appendStringInfo(&live->names,
						 "%sworker id %u of node %d (token " INT64_FORMAT
						 ", \"%.*s\") until %s",
						 live->count > 1 ? "; " : "", image.worker_id, image.node_id,
						 image.token, kMaxHolderBytes, image.holder,
						 timestamptz_to_str(UnixMsToTimestampTz(until_ms)));
}

/* The leases' names, and how many more there are. */
static const char *
NamesOfLiveLeases(LiveLeases *live)
{
	if (live->count > kLeasesNamed)
		appendStringInfo(&live->names, "; and %d more", live->count - kLeasesNamed);
	return live->names.data;
}

/* The lease space shrank under a lease that may still issue IDs: sessions would too. */
[[noreturn]] static void
RefuseSmallerLeaseSpace(int fd, LiveLeases *live)
{
	const uint32 all = g_settings.layout.MaxWorkerId() + 1;

	close(fd);
	ereport(FATAL,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("snowflake.lease_workers = %d leaves out worker ids whose leases may "
					"still issue IDs",
					g_settings.lease_workers),
			 errdetail("Sessions would issue IDs with the worker ids of %d leases: %s.",
					   live->count, NamesOfLiveLeases(live)),
			 errhint("Set snowflake.lease_workers to at least %u until %s, or until the "
					 "holders release these leases; see \"Changing the lease space\" in "
					 "the snowflake documentation.",
					 all - live->lowest_worker_id,
					 timestamptz_to_str(UnixMsToTimestampTz(live->until_ms)))));
}

/* The layout changed under a lease that may issue IDs past the layout check's reach. */
[[noreturn]] static void
RefuseLayoutChangeUnderLeases(int fd, LiveLeases *live)
{
	close(fd);
	ereport(FATAL,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("the snowflake layout changed while leases of the old layout may "
					"issue IDs later than the layout check allows for"),
			 errdetail("The check takes earlier IDs to reach at most 24 hours past this "
					   "start; %d leases of the old layout reach further: %s.",
					   live->count, NamesOfLiveLeases(live)),
			 errhint("Restore the previous snowflake.* layout settings, or start with "
					 "this layout after %s, when the leases lie within the check's "
					 "reach.",
					 timestamptz_to_str(UnixMsToTimestampTz(
						 live->until_ms - snowflake::kMaxDriftLimitMs)))));
}

/*
 * Reads every block the header counts into "table", whatever its node id;
 * tokens count from every block.  FATAL if a lease that may still issue IDs
 * is on a worker id that sessions now use, or, of another layout, reaches
 * past the layout check.  Returns how many leases of other node ids may
 * still issue IDs; *other_node_until_ms is the last of them.
 */
static int
ReadLeaseBlocks(int fd, const char *path, LeaseTable *table, const LeaseFileHeader &header,
				bool settling, int64 *other_node_until_ms)
{
	alignas(8) char block[kLeaseBlockSize];
	const uint32 end = table->first_worker_id + table->count;
	const int64 now_ms = TrustedNowUnixMs();
	LiveLeases on_session_ids{};
	LiveLeases of_old_layout{};
	int of_other_nodes = 0;

	*other_node_until_ms = 0;
	for (uint32 n = 1; n < header.blocks; n++)
	{
		if (!ReadBlock(fd, path, n, block))
			ReportDamage(fd, path, "The file ends inside a block.");

		LeaseImage	image = CheckBlock(fd, path, block, n);

		if (image.magic == kLeaseEmptyMagic)
			continue;
		table->last_token = Max(table->last_token, image.token);
		table->last_change = Max(table->last_change, image.change);

		const int64 until_ms = LeaseMayIssueUntilMs(image, settling, now_ms);

		/*
		 * Another layout: its IDs are below every new one up to the layout
		 * check's reach, which is at least 24 h past this start (the minute
		 * of reserve_ahead more covers the moments between the two checks).
		 */
		if (!LeaseImageOfLayout(image, g_settings.layout))
		{
			if (until_ms >= now_ms + snowflake::kMaxDriftLimitMs)
				NoteLiveLease(&of_old_layout, image, until_ms);
			continue;
		}
		if (n < table->first_worker_id)
		{
			if (until_ms >= now_ms)
				NoteLiveLease(&on_session_ids, image, until_ms);
			continue;
		}
		if (n >= end)
			continue;
		table->entries[n - table->first_worker_id].image = image;
		if (image.node_id != g_settings.node_id && until_ms >= now_ms)
		{
			of_other_nodes++;
			*other_node_until_ms = Max(*other_node_until_ms, until_ms);
		}
	}
	if (on_session_ids.count > 0)
		RefuseSmallerLeaseSpace(fd, &on_session_ids);
	if (of_old_layout.count > 0)
		RefuseLayoutChangeUnderLeases(fd, &of_old_layout);
	table->last_token = Max(table->last_token, header.last_token);
	table->last_change = Max(table->last_change, header.last_change);
	return of_other_nodes;
}

/* Grows the file to the lease space, durably, before the header counts it. */
static uint32
CompleteLeaseBlocks(int fd, const char *path, const LeaseTable *table,
					const LeaseFileHeader &header, const struct stat &st)
{
	const uint32 blocks = Max(header.blocks, table->first_worker_id + table->count);
	bool		wrote = false;

	for (uint32 n = header.blocks; n < blocks; n++)
	{
		WriteEmptyBlock(fd, path, n);
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

/* The node id changed since the last start: said, with what still bounds it. */
static void
LogNodeIdChange(int previous_node_id, int of_other_nodes, int64 until_ms)
{
	ereport(LOG,
			(errmsg("snowflake node id changed from %d to %d", previous_node_id,
					g_settings.node_id),
			 of_other_nodes == 0 ?
				 errdetail("No lease of another node id may still issue IDs.") :
				 errdetail("%d leases of other node ids may still issue IDs, the last "
						   "until %s.  Their worker ids are leased again only after "
						   "them, whatever the node id; no other server may take those "
						   "node ids before then.",
						   of_other_nodes,
						   timestamptz_to_str(UnixMsToTimestampTz(until_ms)))));
}

void
NoteLeaseFileStart(void)
{
	char marker[MAXPGPATH];
	struct stat st;

	DataDirectoryFile(kUpgradeMarkerFileName, marker);
	empty_file_is_new = stat(marker, &st) == 0;
}

void
LoadLeaseFile(LeaseTable *table)
{
	char		path[MAXPGPATH];
	struct stat st;

	DataDirectoryFile(kLeaseStateFileName, path);
	ReadBootId(table->boot_id);

	int			fd = OpenLeaseFile(path, table, &st);

	/* Only the first load of this postmaster may find a new directory's empty file. */
	empty_file_is_new = false;

	LeaseFileHeader header = ReadHeader(fd, path, st);

	/* Whether the first change settles (lease_table.hpp). */
	const bool same_boot = table->boot_id[0] != '\0' &&
		memcmp(header.boot_id, table->boot_id, kBootIdSize) == 0;

	table->needs_bump = header.settle == 1 || (header.clean != 1 && !same_boot) ||
		RecoveryOrBackupStarts();

	int64 other_node_until_ms;
	int of_other_nodes = ReadLeaseBlocks(fd, path, table, header, table->needs_bump,
										 &other_node_until_ms);

	table->file_blocks = CompleteLeaseBlocks(fd, path, table, header, st);

	/* From now on, a crash is not a clean shutdown; the header records the node id. */
	if (!WriteLeaseHeader(fd, table, false))
		FailOn(fd, "write", path);
	if (pg_fsync(fd) != 0)
		FailOn(fd, "fsync", path);
	close(fd);
	if (header.node_id != g_settings.node_id)
		LogNodeIdChange(header.node_id, of_other_nodes, other_node_until_ms);
}
