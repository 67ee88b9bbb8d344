/*
 * lease_table.cpp
 *	  The lease table in shared memory, its changes and its WAL records (see
 *	  lease_table.hpp; the file's format and loading are in lease_file.cpp).
 */
extern "C"
{
#include "postgres.h"

#include "access/xlog.h"		/* RecoveryInProgress, XLogFlush */
#include "access/xloginsert.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"			/* DataDir, MyProcPid, MyStartTimestamp */
#include "storage/fd.h"			/* BasicOpenFile, pg_fdatasync, data_sync_elevel */
#include "storage/ipc.h"		/* before_shmem_exit, shmem hooks */
#include "storage/shmem.h"
#include "utils/timestamp.h"	/* IntervalPGetDatum */
}

#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <unistd.h>

#include "pg/clock.hpp"
#include "pg/clock_watch.hpp"
#include "pg/durable_file.hpp"
#include "pg/leases/lease_file.hpp"
#include "pg/leases/lease_table.hpp"
#include "pg/primary_settings.hpp"
#include "pg/settings.hpp"
#include "pg/shared_state.hpp"
#include "pg/sync_standbys.hpp"
#include "pg/timestamps.hpp"
#include "pg/wal.hpp"

static constexpr const char *kLeaseTrancheName = "snowflake leases";

static LeaseTable *lease_table = nullptr;

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

static bool
EverLeased(const LeaseImage &image)
{
	return image.magic == kLeaseImageMagic && image.token != 0;
}

LeaseState
StateOfLease(const LeaseEntry &entry, int64 now_ms)
{
	const LeaseImage &image = entry.image;

	if (!EverLeased(image))
		return LeaseState::kNeverLeased;
	if (image.flags & kLeaseReleased)
		return LeaseState::kReleased;
	if (image.ttl_ms == 0)
		return entry.connected ? LeaseState::kHeld : LeaseState::kDisconnected;
	return image.not_after_ms > now_ms ? LeaseState::kHeld : LeaseState::kExpired;
}

bool
HeldByThisBackend(const LeaseEntry &entry)
{
	return entry.connected && entry.image.backend_pid == MyProcPid &&
		entry.image.backend_start == MyStartTimestamp;
}

bool
LeaseImageOfLayout(const LeaseImage &image, const snowflake::Layout &layout)
{
	return image.layout_epoch_ms == layout.epoch_ms &&
		image.layout_node_bits == layout.node_bits &&
		image.layout_worker_bits == layout.worker_bits &&
		image.layout_sequence_bits == layout.sequence_bits;
}

snowflake::LeaseHistory
LeaseHistoryOf(const LeaseEntry &entry, int64 now_ms)
{
	const LeaseImage &image = entry.image;
	snowflake::LeaseHistory history{};

	history.ever_leased = EverLeased(image);
	if (!history.ever_leased)
		return history;
	history.held = StateOfLease(entry, now_ms) == LeaseState::kHeld;
	history.released = (image.flags & kLeaseReleased) != 0;
	history.not_before_ms = image.not_before_ms;
	history.not_after_ms = image.not_after_ms;
	history.last_timestamp_ms = image.last_timestamp_ms;
	history.free_since_ms = history.released ? TimestampTzToUnixMs(image.released_at) :
											   image.not_after_ms;
	return history;
}

int64
LeaseMayIssueUntilMs(const LeaseImage &image, bool settling, int64 now_ms)
{
	snowflake::LeaseHistory history = LeaseHistoryOf({image, false}, now_ms);

	if (!history.ever_leased)
		return 0;
	if (settling && !history.released)
		history.not_after_ms = Max(image.not_after_ms, now_ms + image.window_ms);
	/* The next holder starts above everything this one may issue. */
	return snowflake::NextNotBefore(history, 0);
}

Datum
IntervalMsDatum(int64 ms)
{
	Interval   *interval = static_cast<Interval *>(palloc0(sizeof(Interval)));

	interval->time = ms * 1000;
	return IntervalPGetDatum(interval);
}

/* on_shmem_exit of the postmaster: a normal exit (code 0) needs no settle next. */
static void
MarkCleanShutdown(int code, Datum arg)
{
	(void) arg;
	if (code == 0 && lease_table != nullptr)
		MarkLeaseFileClean(lease_table);
}

void
RequestLeaseTable(void)
{
	RequestAddinShmemSpace(LeaseTableSize());
	RequestNamedLWLockTranche(kLeaseTrancheName, 2);
}

void
StartLeaseTable(void)
{
	bool		found;

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
		/*
		 * pg_upgrade's starts lease nothing, and leave the lease state as
		 * they found it: the guard tells a carried one by that
		 * (data_directory.cpp).
		 */
		table->count = IsBinaryUpgrade ? 0 : static_cast<uint32>(g_settings.lease_workers);
		pg_atomic_init_u64(&table->written_change, 0);
		if (table->count > 0)
		{
			LoadLeaseFile(table);
			pg_atomic_init_u64(&table->written_change, table->last_change);
			table->synced_change = table->last_change;
			/* As the reservation's: children drop it, a crash reinit runs it with 1. */
			if (!IsUnderPostmaster)
				on_shmem_exit(MarkCleanShutdown, 0);
		}
	}
	LWLockRelease(AddinShmemInitLock);
	lease_table = table;
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

		DataDirectoryFile(kLeaseStateFileName, path);
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
	return WriteLeaseBlock(LeaseFile(), image.worker_id, &image, sizeof(image));
}

static XLogRecPtr
LogImage(const LeaseImage &image)
{
	XLogBeginInsert();
	XLogRegisterData(reinterpret_cast<char *>(const_cast<LeaseImage *>(&image)), sizeof(image));
	return XLogInsert(kSnowflakeRmgrId, kXlogLease);
}

/* ERROR (or "elevel") for a write into the file that failed. */
static void
ReportWriteFailure(int elevel = ERROR)
{
	ereport(elevel,
			(errcode_for_file_access(),
			 errmsg("could not write file \"%s\": %m", kLeaseStateFileName)));
}

/*
 * Lock held exclusively.  Once per run, before the first change: raises
 * the largest token, moves the not_after of every lease not released to
 * now + its window if the start needs it (lease_table.hpp), logs every
 * entry again (a crash can lose the records of changes the file kept:
 * standbys catch up), and clears the header's pending settle.  Its writes
 * reach the disk with the next fsync; a crash of the machine before that
 * settles again at the next start (another boot id).
 */
static void
SettleOncePerRun(LeaseTable *table)
{
	if (seen_settled || table->settled)
	{
		seen_settled = true;
		return;
	}

	/*
	 * The raw clock: a token only has to be larger than earlier ones, and a
	 * clock stepped ahead only makes it larger (no ID carries it).
	 */
	const int64 now_ms = NowUnixMs();

	if (now_ms > 0)
		table->last_token = Max(table->last_token, now_ms * kTokensPerMs);

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
			image.crc = LeaseImageCrc(image);
			if (!WriteImage(image))
				ReportWriteFailure();
			table->entries[i].image = image;
			pg_atomic_write_u64(&table->written_change, image.change);
		}
		(void) LogImage(image);
	}
	table->settled = true;
	/* The pending settle is done; the header keeps the raised token. */
	if (!WriteLeaseHeader(LeaseFile(), table, false))
	{
		table->settled = false;
		ReportWriteFailure();
	}
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

	/* A grant: its token goes into the header first (a lower bound for the next start). */
	if (image->token > table->last_token)
	{
		table->last_token = image->token;
		if (!WriteLeaseHeader(LeaseFile(), table, false))
			ReportWriteFailure();
	}

	image->magic = kLeaseImageMagic;
	image->change = table->last_change + 1;
	image->crc = LeaseImageCrc(*image);
	if (!WriteImage(*image))
	{
		int			saved_errno = errno;

		const LeaseImage &old = table->entries[index].image;

		/* Put the old block back (an entry never leased: empty): it must stay readable. */
		(void) WriteImage(
			old.magic == kLeaseImageMagic ? old : EmptyLeaseImage(image->worker_id));
		errno = saved_errno;
		ReportWriteFailure();
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

/*
 * before_shmem_exit: the backend's connection-scoped leases end.  Nothing
 * durable changes: no connection of an earlier run is taken for alive.
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

		if (HeldByThisBackend(entry))
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

void
ReplayLeaseRecord(XLogReaderState *record)
{
	LeaseImage	image;

	CopyWalRecordBody(record, "LEASE", &image, sizeof(image));
	if (image.crc != LeaseImageCrc(image))
		elog(PANIC, "snowflake LEASE record has a wrong checksum");

	/*
	 * A standby stops, rather than drop a lease it cannot apply.  Images of
	 * ids never leased, and history of another layout (the layout file
	 * checks that), apply or not as before.
	 */
	if (EverLeased(image) && LeaseImageOfLayout(image, g_settings.layout))
		CheckLeaseRecordApplies({image.worker_id, image.node_id,
								 (image.flags & kLeaseReleased) == 0 &&
									 image.not_after_ms > TrustedNowUnixMs()});

	LeaseTable *table = RequireLeaseTable();

	LWLockAcquire(table->lock, LW_EXCLUSIVE);

	/* The header keeps the largest token: the WAL that has it goes away. */
	bool		header_changed = image.token > table->last_token;

	table->last_token = Max(table->last_token, image.token);
	if (image.change > table->last_change)
		table->last_change = image.change;

	/*
	 * Apply an image newer than the entry's, of this server's lease space
	 * and layout (a standby runs with its primary's), whatever its node id:
	 * a worker id's windows follow one another across node ids.  The file
	 * keeps what replay skips after a restart.
	 */
	uint32		index = image.worker_id - table->first_worker_id;
	LeaseEntry *entry = image.worker_id >= table->first_worker_id && index < table->count ?
		&table->entries[index] : nullptr;
	bool apply = entry != nullptr && LeaseImageOfLayout(image, g_settings.layout) &&
		(entry->image.magic != kLeaseImageMagic || image.change > entry->image.change);

	/*
	 * On a standby, replay is the file's source, and the start settled
	 * already.  In a crash recovery, an image newer than the file's means
	 * that the file lost writes (the machine crashed): settle, even if the
	 * boot id said otherwise.
	 */
	if (apply && !table->needs_bump)
	{
		table->needs_bump = true;
		header_changed = true;
	}
	if ((header_changed && !WriteLeaseHeader(LeaseFile(), table, false)) ||
		(apply && !WriteImage(image)) ||
		((header_changed || apply) && pg_fdatasync(LeaseFile()) != 0))
		ReportWriteFailure(data_sync_elevel(ERROR));
	if (apply)
	{
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
