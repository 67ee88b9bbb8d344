/*
 * lease_table.cpp
 *	  The lease table in shared memory, its file, and its WAL records (see
 *	  lease_table.hpp).
 *
 * The file, $PGDATA/snowflake.lease_state, holds one 512-byte block per
 * worker id (block n at offset 512 n), written in place: a sector is
 * written whole or not at all, and each image carries a CRC.  The blocks of
 * the lease space are allocated at start, so a change overwrites allocated
 * space and never runs out of disk.
 *
 * Block 0 is the header instead (worker id 0 always belongs to sessions):
 * whether the last shutdown was clean.  The postmaster clears it at start
 * and sets it at a clean exit, after an fsync of the file.
 *
 * The first change of a run settles the table: it logs every entry again
 * (a crash can lose the records of changes the file kept: standbys then
 * catch up), and after a start that was not clean, or in a server that
 * was a standby, it first moves the not_after of every lease not released
 * to now + its window, since renewals are not waited for (lease_table.hpp).
 */
extern "C"
{
#include "postgres.h"

#include "access/xlog.h"		/* RecoveryInProgress, XLogFlush */
#include "access/xloginsert.h"
#include "common/file_perm.h"	/* pg_file_create_mode */
#include "lib/stringinfo.h"
#include "access/xlog_internal.h"	/* STANDBY_SIGNAL_FILE */
#include "miscadmin.h"			/* DataDir, MyProcPid, MyStartTimestamp */
#include "storage/fd.h"			/* BasicOpenFile, pg_fdatasync, data_sync_elevel */
#include "storage/ipc.h"		/* before_shmem_exit, shmem hooks */
#include "storage/shmem.h"
}

#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pg/clock.hpp"
#include "pg/durable_file.hpp"
#include "pg/leases/lease_table.hpp"
#include "pg/reservation/reservation_wal.hpp"
#include "pg/settings.hpp"
#include "pg/shared_state.hpp"
#include "pg/sync_standbys.hpp"

static constexpr const char *kLeaseTrancheName = "snowflake leases";

static LeaseTable *lease_table = nullptr;
static shmem_request_hook_type prev_shmem_request_hook = nullptr;
static shmem_startup_hook_type prev_shmem_startup_hook = nullptr;

/* This process's descriptor of the file, opened on first use. */
static int	lease_fd = -1;

/* Whether this process saw the table settled (see the header comment). */
static bool seen_settled = false;

static Size
LeaseTableSize(void)
{
	return add_size(offsetof(LeaseTable, entries),
					mul_size(static_cast<Size>(g_settings.lease_workers), sizeof(LeaseEntry)));
}

static void
LeaseFilePath(char *path)
{
	DataDirectoryFile(kLeaseStateFileName, path);
}

static const char *kLeaseFileHint =
	"Restore the file from a backup of the data directory.  Only if no application "
	"holds a lease (every not_after has passed), remove it: worker ids are then "
	"leased from this run's generation floor.";

static pg_crc32c
ImageCrc(const LeaseImage &image)
{
	pg_crc32c	crc;

	INIT_CRC32C(crc);
	COMP_CRC32C(crc, &image, offsetof(LeaseImage, crc));
	FIN_CRC32C(crc);
	return crc;
}

bool
ImageMatches(const LeaseImage &image, const snowflake::Layout &layout, int node_id)
{
	return image.node_id == node_id && image.layout_epoch_ms == layout.epoch_ms &&
		image.layout_node_bits == layout.node_bits &&
		image.layout_worker_bits == layout.worker_bits &&
		image.layout_sequence_bits == layout.sequence_bits;
}

/* Refuses (FATAL) a block that is not an image of worker id "block". */
static void
CheckBlock(const char *path, const LeaseImage &image, uint32 block)
{
	char		detail[kStateProblemSize];

	if (image.magic != kLeaseImageMagic)
		snprintf(detail, sizeof(detail), "Block %u does not start with a lease image.", block);
	else if (image.crc != ImageCrc(image))
		snprintf(detail, sizeof(detail), "The checksum of block %u is wrong.", block);
	else if (image.worker_id != block)
		snprintf(detail, sizeof(detail), "Block %u holds worker id %u.", block,
				 image.worker_id);
	else
		return;
	ReportCorruptStateFile(path, "lease state", detail, kLeaseFileHint);
}

/* Makes the file's creation durable. */
static void
FsyncDataDirectory(void)
{
	int			fd = open(DataDir, O_RDONLY | PG_BINARY, 0);

	if (fd < 0 || pg_fsync(fd) != 0)
		ereport(FATAL, (errcode_for_file_access(),
						errmsg("could not fsync directory \"%s\": %m", DataDir)));
	close(fd);
}

static pg_crc32c
HeaderCrc(const LeaseFileHeader &header)
{
	pg_crc32c	crc;

	INIT_CRC32C(crc);
	COMP_CRC32C(crc, &header, offsetof(LeaseFileHeader, crc));
	FIN_CRC32C(crc);
	return crc;
}

/* Writes the header, saying whether the shutdown is clean, and fsyncs. */
static bool
WriteHeader(int fd, bool clean)
{
	alignas(8) char block[kLeaseBlockSize];
	LeaseFileHeader header;

	memset(&header, 0, sizeof(header));
	header.magic = kLeaseHeaderMagic;
	header.clean = clean ? 1 : 0;
	header.crc = HeaderCrc(header);
	memset(block, 0, sizeof(block));
	memcpy(block, &header, sizeof(header));
	return pwrite(fd, block, kLeaseBlockSize, 0) == kLeaseBlockSize && pg_fsync(fd) == 0;
}

/*
 * on_shmem_exit callback of the postmaster: at a normal exit (code 0),
 * after every other process, makes the file durable and marks the shutdown
 * clean, so that the next start needs no settling bump.
 */
static void
MarkCleanShutdown(int code, Datum arg)
{
	(void) arg;
	char		path[MAXPGPATH];

	if (code != 0 ||
		snprintf(path, sizeof(path), "%s/%s", DataDir, kLeaseStateFileName) >= MAXPGPATH)
		return;

	int			fd = open(path, O_RDWR | PG_BINARY, 0);

	if (fd < 0)
		return;
	/* On failure the header keeps saying "not clean", which is safe. */
	if (pg_fsync(fd) != 0 || !WriteHeader(fd, true))
		ereport(LOG, (errcode_for_file_access(),
					  errmsg("could not mark file \"%s\" as cleanly shut down: %m", path)));
	close(fd);
}

/*
 * Postmaster, at start and after a crash restart: reads the file into the
 * table (images of another layout or node id are history that no longer
 * matters: the layout check keeps new IDs above them), and allocates the
 * blocks of the lease space.  Plain POSIX I/O: fd.c may not be usable here.
 */
static void
LoadLeaseFile(LeaseTable *table)
{
	char		path[MAXPGPATH];
	alignas(8) char block[kLeaseBlockSize];
	const uint32 end = table->first_worker_id + table->count;
	bool		created = false;
	bool		clean = false;

	LeaseFilePath(path);
	int			fd = open(path, O_RDWR | PG_BINARY, 0);

	if (fd < 0 && errno == ENOENT)
	{
		/*
		 * pg_upgrade's start leases nothing, and leaves the file to be
		 * carried from the old data directory (upgrade_guard.cpp).
		 */
		if (IsBinaryUpgrade)
			return;
		fd = open(path, O_RDWR | O_CREAT | O_EXCL | PG_BINARY, pg_file_create_mode);
		created = true;
	}
	if (fd < 0)
		ereport(FATAL, (errcode_for_file_access(),
						errmsg("could not open file \"%s\": %m", path)));

	for (uint32 n = 0;; n++)
	{
		ssize_t		got = pread(fd, block, kLeaseBlockSize, static_cast<off_t>(n) * kLeaseBlockSize);

		if (got == 0)
			break;
		if (got != kLeaseBlockSize)
		{
			int			saved_errno = errno;

			close(fd);
			if (got < 0)
			{
				errno = saved_errno;
				ereport(FATAL, (errcode_for_file_access(),
								errmsg("could not read file \"%s\": %m", path)));
			}
			ReportCorruptStateFile(path, "lease state",
								   "Its size is not a multiple of 512 bytes.", kLeaseFileHint);
		}

		if (n == 0)
		{
			LeaseFileHeader header;

			memcpy(&header, block, sizeof(header));
			clean = header.magic == kLeaseHeaderMagic && header.crc == HeaderCrc(header) &&
				header.clean == 1;
			continue;
		}

		LeaseImage	image;

		memcpy(&image, block, sizeof(image));
		if (image.magic == 0)
			continue;			/* a block never written */
		CheckBlock(path, image, n);
		table->last_token = Max(table->last_token, image.token);
		table->last_change = Max(table->last_change, image.change);
		if (n >= table->first_worker_id && n < end &&
			ImageMatches(image, g_settings.layout, g_settings.node_id))
			table->entries[n - table->first_worker_id].image = image;
	}

	/* Allocate the lease space's blocks: writes in place never need space. */
	off_t		size = lseek(fd, 0, SEEK_END);
	off_t		needed = static_cast<off_t>(end) * kLeaseBlockSize;

	memset(block, 0, sizeof(block));
	for (off_t at = size; at < needed; at += kLeaseBlockSize)
		if (pwrite(fd, block, kLeaseBlockSize, at) != kLeaseBlockSize)
		{
			int			saved_errno = errno;

			close(fd);
			errno = saved_errno;
			ereport(FATAL, (errcode_for_file_access(),
							errmsg("could not write file \"%s\": %m", path)));
		}
	/* From now on, a crash is not a clean shutdown; WriteHeader fsyncs. */
	if (!WriteHeader(fd, false))
		ereport(FATAL, (errcode_for_file_access(),
						errmsg("could not write file \"%s\": %m", path)));
	close(fd);
	table->needs_bump = !clean && !created;
	if (created)
		FsyncDataDirectory();
	pg_atomic_init_u64(&table->written_change, table->last_change);
	table->synced_change = table->last_change;
}

static void
RequestLeaseTable(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(LeaseTableSize());
	RequestNamedLWLockTranche(kLeaseTrancheName, 2);
}

static void
StartLeaseTable(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	lease_table = nullptr;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	LeaseTable *table =
		static_cast<LeaseTable *>(ShmemInitStruct("snowflake leases", LeaseTableSize(), &found));

	if (!found)
	{
		LWLockPadded *locks = GetNamedLWLockTranche(kLeaseTrancheName);

		memset(table, 0, LeaseTableSize());
		table->lock = &locks[0].lock;
		table->sync_lock = &locks[1].lock;
		table->first_worker_id = SessionWorkerIds();
		table->count = static_cast<uint32>(g_settings.lease_workers);
		pg_atomic_init_u64(&table->written_change, 0);
		if (table->count > 0)
		{
			LoadLeaseFile(table);

			/*
			 * A standby's leases are replayed, maybe behind its primary's:
			 * once promoted, it settles with a bump.
			 */
			struct stat st;

			if (stat(STANDBY_SIGNAL_FILE, &st) == 0 || stat(RECOVERY_SIGNAL_FILE, &st) == 0)
				table->needs_bump = true;
			/* As the reservation's: children drop it, a crash reinit runs it with 1. */
			if (!IsUnderPostmaster)
				on_shmem_exit(MarkCleanShutdown, 0);
		}
	}
	LWLockRelease(AddinShmemInitLock);
	lease_table = table;
}

void
InstallLeaseTableHooks(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = RequestLeaseTable;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = StartLeaseTable;
}

LeaseTable *
RequireLeaseTable(void)
{
	/* Both are set up by the same preload: its error says how. */
	if (unlikely(lease_table == nullptr))
	{
		(void) RequireSharedState();
		elog(ERROR, "snowflake lease table is not set up");
	}
	return lease_table;
}

static int
LeaseFile(void)
{
	if (lease_fd < 0)
	{
		char		path[MAXPGPATH];

		LeaseFilePath(path);
		lease_fd = BasicOpenFile(path, O_RDWR | PG_BINARY);
		if (lease_fd < 0)
			ereport(ERROR, (errcode_for_file_access(),
							errmsg("could not open file \"%s\": %m", path)));
	}
	return lease_fd;
}

/* Writes "image" into its block; false (errno set) on failure. */
static bool
WriteImage(const LeaseImage &image)
{
	alignas(8) char block[kLeaseBlockSize];

	memset(block, 0, sizeof(block));
	memcpy(block, &image, sizeof(image));
	return pwrite(LeaseFile(), block, kLeaseBlockSize,
				  static_cast<off_t>(image.worker_id) * kLeaseBlockSize) == kLeaseBlockSize;
}

static XLogRecPtr
LogImage(const LeaseImage &image)
{
	XLogBeginInsert();
	XLogRegisterData(reinterpret_cast<char *>(const_cast<LeaseImage *>(&image)), sizeof(image));
	return XLogInsert(kSnowflakeRmgrId, kXlogLease);
}

/*
 * Lock held exclusively.  Once per run, before the first change: settles
 * the table (see the header comment).  Its writes reach the disk with the
 * next fsync of the file, or are settled again by the next start.
 */
static void
SettleOncePerRun(LeaseTable *table)
{
	if (seen_settled || table->settled)
	{
		seen_settled = true;
		return;
	}

	const int64 now_ms = NowUnixMs();

	for (uint32 i = 0; i < table->count; i++)
	{
		LeaseImage	image = table->entries[i].image;

		if (image.magic != kLeaseImageMagic)
			continue;
		if (table->needs_bump && image.token != 0 && !(image.flags & kLeaseReleased) &&
			image.not_after_ms < now_ms + image.window_ms)
		{
			image.not_after_ms = now_ms + image.window_ms;
			image.change = ++table->last_change;
			image.crc = ImageCrc(image);
			if (!WriteImage(image))
				ereport(ERROR, (errcode_for_file_access(),
								errmsg("could not write file \"%s\": %m", kLeaseStateFileName)));
			table->entries[i].image = image;
			pg_atomic_write_u64(&table->written_change, image.change);
		}
		(void) LogImage(image);
	}
	table->settled = true;
	seen_settled = true;
}

void
LockLeaseTableForChange(LeaseTable *table)
{
	LWLockAcquire(table->lock, LW_EXCLUSIVE);
	SettleOncePerRun(table);
}

uint64
CommitLeaseImage(LeaseTable *table, uint32 index, LeaseImage *image, bool connected,
				 XLogRecPtr *lsn)
{
	Assert(LWLockHeldByMeInMode(table->lock, LW_EXCLUSIVE) && table->settled);

	image->magic = kLeaseImageMagic;
	image->change = table->last_change + 1;
	image->crc = ImageCrc(*image);
	if (!WriteImage(*image))
	{
		int			saved_errno = errno;

		/* Put the old image back: the block must stay readable. */
		if (table->entries[index].image.magic == kLeaseImageMagic)
			(void) WriteImage(table->entries[index].image);
		errno = saved_errno;
		ereport(ERROR, (errcode_for_file_access(),
						errmsg("could not write file \"%s\": %m", kLeaseStateFileName)));
	}

	START_CRIT_SECTION();
	*lsn = LogImage(*image);
	table->entries[index].image = *image;
	table->entries[index].connected = connected;
	table->last_change = image->change;
	table->last_token = Max(table->last_token, image->token);
	pg_atomic_write_u64(&table->written_change, image->change);
	END_CRIT_SECTION();
	return image->change;
}

/* Fsyncs the file, if no other process did since "change" was written. */
static void
SyncLeaseFile(LeaseTable *table, uint64 change)
{
	LWLockAcquire(table->sync_lock, LW_EXCLUSIVE);
	if (table->synced_change < change)
	{
		/* Every change up to here is in the page cache: one fsync for all. */
		uint64		target = pg_atomic_read_u64(&table->written_change);

		if (pg_fdatasync(LeaseFile()) != 0)
			ereport(data_sync_elevel(ERROR),
					(errcode_for_file_access(),
					 errmsg("could not fsync file \"%s\": %m", kLeaseStateFileName)));
		table->synced_change = target;
	}
	LWLockRelease(table->sync_lock);
}

void
MakeLeaseChangeDurable(LeaseTable *table, uint64 change, XLogRecPtr lsn)
{
	Assert(!LWLockHeldByMe(table->lock));
	SyncLeaseFile(table, change);
	if (SynchronousStandbysDefined())
	{
		XLogFlush(lsn);
		WaitForSynchronousStandbys(lsn);
	}
	else
		XLogSetAsyncXactLSN(lsn);
}

void
PublishLeaseChange(XLogRecPtr lsn)
{
	XLogSetAsyncXactLSN(lsn);
}

/*
 * before_shmem_exit callback: the backend's connection ends, and with it
 * its connection-scoped leases.  Nothing durable changes: after a restart
 * no connection of the earlier run is taken for alive anyway.
 */
static void
EndConnectionLeases(int code, Datum arg)
{
	(void) code;
	(void) arg;
	LeaseTable *table = lease_table;

	if (table == nullptr)
		return;
	LWLockAcquire(table->lock, LW_EXCLUSIVE);
	for (uint32 i = 0; i < table->count; i++)
	{
		LeaseEntry &entry = table->entries[i];

		if (entry.connected && entry.image.backend_pid == MyProcPid &&
			entry.image.backend_start == MyStartTimestamp)
			entry.connected = false;
	}
	LWLockRelease(table->lock);
}

void
WatchConnectionLeases(void)
{
	static bool registered = false;

	if (!registered)
	{
		before_shmem_exit(EndConnectionLeases, 0);
		registered = true;
	}
}

static LeaseImage
ReadLeaseRecord(XLogReaderState *record)
{
	LeaseImage	image;

	if (XLogRecGetDataLen(record) != sizeof(image))
		elog(PANIC, "snowflake LEASE record has length %u, expected %zu",
			 XLogRecGetDataLen(record), sizeof(image));
	memcpy(&image, XLogRecGetData(record), sizeof(image));
	if (image.crc != ImageCrc(image))
		elog(PANIC, "snowflake LEASE record has a wrong checksum");
	return image;
}

void
ReplayLeaseRecord(XLogReaderState *record)
{
	LeaseImage	image = ReadLeaseRecord(record);
	LeaseTable *table = RequireLeaseTable();

	LWLockAcquire(table->lock, LW_EXCLUSIVE);
	table->needs_bump = true;	/* a crash recovery, or a standby */
	table->last_token = Max(table->last_token, image.token);
	if (image.change > table->last_change)
		table->last_change = image.change;

	/*
	 * Apply an image newer than the entry's, of this server's lease space
	 * and layout (a standby runs with its primary's); the file keeps what
	 * replay skips after a restart.
	 */
	uint32		index = image.worker_id - table->first_worker_id;
	LeaseEntry *entry = image.worker_id >= table->first_worker_id && index < table->count ?
		&table->entries[index] : nullptr;

	if (entry != nullptr && ImageMatches(image, g_settings.layout, g_settings.node_id) &&
		(entry->image.magic != kLeaseImageMagic || image.change > entry->image.change))
	{
		if (!WriteImage(image) || pg_fdatasync(LeaseFile()) != 0)
			ereport(data_sync_elevel(ERROR),
					(errcode_for_file_access(),
					 errmsg("could not write file \"%s\": %m", kLeaseStateFileName)));
		entry->image = image;
		entry->connected = false;
	}
	LWLockRelease(table->lock);
}

void
DescribeLeaseRecord(StringInfo buf, XLogReaderState *record)
{
	LeaseImage	image;

	if (XLogRecGetDataLen(record) != sizeof(image))
		return;
	memcpy(&image, XLogRecGetData(record), sizeof(image));
	appendStringInfo(buf,
					 "node %d worker %u token " INT64_FORMAT " change " UINT64_FORMAT
					 " window " INT64_FORMAT " to " INT64_FORMAT "%s",
					 image.node_id, image.worker_id, image.token, image.change,
					 image.not_before_ms, image.not_after_ms,
					 (image.flags & kLeaseReleased) ? " released" : "");
}
