/*
 * reservation.cpp
 *	  Loading, replaying and extending the durable reservation, and fixing
 *	  the generation floor.  The invariants are in README.md; the file
 *	  only grows because durable_until, guarded by reservation_lock, is the
 *	  largest value written, and a new record always exceeds it.
 */
extern "C"
{
#include "postgres.h"

#include "access/xlogdefs.h"
#include "catalog/pg_control.h"
#include "common/controldata_utils.h"
#include "miscadmin.h" /* IsUnderPostmaster, DataDir */
#include "port/atomics.h"
#include "storage/ipc.h"		/* on_shmem_exit */
#include "storage/lwlock.h"
}

#include <cstdio>

#include "core/horizon.hpp"
#include "core/reach_ahead.hpp"
#include "pg/clock.hpp"
#include "pg/clock_watch.hpp"
#include "pg/data_directory.hpp"
#include "pg/durable_file.hpp"
#include "pg/reservation/reservation.hpp"
#include "pg/reservation/reservation_record.hpp"
#include "pg/settings.hpp"
#include "pg/sync_standbys.hpp"

static int64
ToTimestamp(int64 unix_ms)
{
	return Max(unix_ms - g_settings.layout.epoch_ms, INT64CONST(0));
}

static int64
ToUnixMs(int64 timestamp)
{
	return timestamp + g_settings.layout.epoch_ms;
}

/*
 * Nothing past the layout's end: no ID can have a later timestamp, so a
 * reservation there promises no more, and a start reads it back.
 */
static int64
WithinLayout(int64 timestamp)
{
	return snowflake::ClampTimestampToLayout(g_settings.layout, timestamp);
}

bool
ReadReservationFile(int64 *unix_ms)
{
	char		path[MAXPGPATH];
	char		hint[320];
	char		detail[kStateProblemSize];
	int64		now_ms = NowUnixMs();

	snprintf(hint, sizeof(hint),
			 "Restore the file from a backup of the data directory, or write in it, "
			 "on one line, a Unix time in milliseconds later than every ID this server "
			 "can have issued, such as the current time plus " INT64_FORMAT " ms "
			 "(at most the last millisecond of the running layout): " INT64_FORMAT ".",
			 static_cast<int64>(kMaxReachAheadMs),
			 snowflake::ClampUnixMsToLayout(g_settings.layout, now_ms + kMaxReachAheadMs));
	DataDirectoryFile(kReservationFileName, path);
	if (!ReadStateFile(path, "reservation", unix_ms, 1, hint))
		return false;
	if (*unix_ms < 0)
	{
		snprintf(detail, sizeof(detail), "The reservation, " INT64_FORMAT ", is negative.",
				 *unix_ms);
		ReportCorruptStateFile(path, "reservation", detail, hint);
	}
	if (*unix_ms > g_settings.layout.LastUnixMs())
	{
		snprintf(detail, sizeof(detail),
				 "The reservation, " INT64_FORMAT " (Unix ms), lies beyond the last "
				 "millisecond of the running layout, " INT64_FORMAT ".",
				 *unix_ms, static_cast<int64>(g_settings.layout.LastUnixMs()));
		ReportCorruptStateFile(path, "reservation", detail, hint);
	}
	return true;
}

static void
WriteReservationFile(int64 unix_ms)
{
	char		path[MAXPGPATH];

	DataDirectoryFile(kReservationFileName, path);
	WriteStateFile(path, &unix_ms, 1, ERROR);
}

/* Raises reserved_until to "timestamp" unless it is higher already. */
static bool
RaiseReservedUntil(SharedState *state, int64 timestamp)
{
	uint64		current = pg_atomic_read_u64(&state->reserved_until);

	while (static_cast<int64>(current) < timestamp)
		if (pg_atomic_compare_exchange_u64(&state->reserved_until, &current,
										   static_cast<uint64>(timestamp)))
			return true;
	return false;
}

/*
 * Whether the data directory's last run as a primary ended in a clean
 * shutdown.  Read from pg_control as this memory is set up, before the
 * startup process changes it: a crash restart (the postmaster
 * re-initialising) and an immediate shutdown leave "in production", a
 * standby's shutdown "shut down in recovery".
 */
static bool
LastShutdownWasClean(void)
{
	bool crc_ok = false;
	ControlFileData *control = get_controlfile(DataDir, &crc_ok);
	bool clean = crc_ok && control->state == DB_SHUTDOWNED;

	pfree(control);
	return clean;
}

void
InitReservationState(SharedState *state)
{
	int64		unix_ms = 0;

	state->reservation_lock = &(GetNamedLWLockTranche(kSharedLockTrancheName))->lock;
	pg_atomic_init_u32(&state->gap_reported, 0);
	pg_atomic_init_u64(&state->reservations, 0);
	pg_atomic_init_u64(&state->clock_steps_back, 0);
	pg_atomic_init_u64(&state->largest_step_back_ms, 0);

	state->reservation_known = ReadReservationFile(&unix_ms);
	/* A clean shutdown wrote the newest timestamp issued (RecordIssuedAtExit). */
	state->reservation_exact = state->reservation_known && LastShutdownWasClean();
	pg_atomic_init_u64(&state->reserved_until,
					   static_cast<uint64>(state->reservation_known ? ToTimestamp(unix_ms) : 0));
	state->durable_until = ReservedUntil(state);
	state->durable_lsn = InvalidXLogRecPtr;
	state->floor_ready = false;
	state->floor_from_reservation = false;
	state->floor_after_clean_shutdown = false;
	state->floor_timestamp = 0;

	/*
	 * In the postmaster: its children drop this callback, and a crash
	 * re-initialisation runs it with code 1 before dropping it, so it acts
	 * only when the postmaster exits normally, after all other processes,
	 * with this memory still attached.
	 */
	if (!IsUnderPostmaster)
		on_shmem_exit(RecordIssuedAtExit, PointerGetDatum(state));
}

/*
 * A RESERVE record past the running layout's end (from a primary whose
 * layout ends later, or from a version that did not clamp it) is replayed
 * as the layout's last millisecond, which promises as much here.
 */
static int64
ReplayableReservationUnixMs(int64 until_unix_ms)
{
	const snowflake::Layout &layout = g_settings.layout;
	/* Once per startup process: such a primary writes one every few seconds. */
	static bool warned = false;

	if (until_unix_ms <= layout.LastUnixMs())
		return until_unix_ms;
	if (warned)
		return layout.LastUnixMs();
	warned = true;
	ereport(WARNING,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg(
				 "snowflake reservation record lies beyond the end of the running layout"),
			 errdetail("The record reserves up to " INT64_FORMAT " (Unix ms); the last "
					   "millisecond of the running layout is " INT64_FORMAT
					   ", which is replayed instead; later such records are lowered "
					   "the same way, without a message, until the next start.",
					   until_unix_ms, static_cast<int64>(layout.LastUnixMs())),
			 errhint("Give this server the primary's snowflake.* layout settings, and run "
					 "the same snowflake version on both.")));
	return layout.LastUnixMs();
}

void
ReplayReservation(int64 until_unix_ms)
{
	SharedState *state = RequireSharedState();

	until_unix_ms = ReplayableReservationUnixMs(until_unix_ms);

	int64		timestamp = ToTimestamp(until_unix_ms);

	state->reservation_known = true;
	if (!RaiseReservedUntil(state, timestamp))
		return;
	state->reservation_exact = false;
	state->durable_until = timestamp;
	/* Replay is the only writer now; the file keeps what recovery skips. */
	WriteReservationFile(until_unix_ms);
}

/*
 * Caller holds reservation_lock; recovery has ended.  Every ID and every
 * lease passes through here first, and the order matters for uniqueness:
 *	1. The first-ID records (the layout, the lease space), fsynced: a later
 *	   start checks its layout and lease space against them, so an ID
 *	   issued before them could be issued again under a layout or lease
 *	   space they would have refused.  Only now, so that a start that
 *	   failed does not lock in a layout no ID was issued under.
 *	2. If there is none, a reservation file with the floor - 1, so that
 *	   only a 1.0 data directory (or a deleted file) lacks one.
 *	3. Last, the floor, behind a write barrier: a process that sees
 *	   floor_ready sees the files of 1 and 2 on disk.
 * A failure (ERROR) in 1 or 2 leaves the floor unfixed; the next caller
 * tries again (rewriting a file already written is harmless).
 */
static void
FixFloorLocked(SharedState *state)
{
	int64		floor;

	if (state->floor_ready)
		return;
	if (state->reservation_known)
		floor = ReservedUntil(state) + 1;
	else if (DataDirectoryIsNew())
	{
		/* Nothing was ever issued here: the clock is the only bound. */
		floor = state->started_unix_ms - g_settings.layout.epoch_ms;
	}
	else
	{
		/*
		 * Nothing was reserved, but snowflake 1.0 may have issued IDs here
		 * (or the file was removed): none reaches past the start +
		 * kVersion10ReachAheadMs (see there for why not kMaxReachAheadMs).
		 */
		floor = state->started_unix_ms - g_settings.layout.epoch_ms +
			kVersion10ReachAheadMs + 1;
	}

	RecordDataDirectoryBeforeFirstId();
	if (!state->reservation_known)
	{
		int64		reserved = WithinLayout(floor - 1);

		/* Not a record: snowflake_status() still shows none before the first. */
		WriteReservationFile(ToUnixMs(reserved));
		state->durable_until = reserved;
		RaiseReservedUntil(state, reserved);
	}

	state->floor_from_reservation = state->reservation_known;
	state->floor_after_clean_shutdown = state->reservation_known &&
		state->reservation_exact;
	state->floor_timestamp = floor;
	pg_write_barrier();
	state->floor_ready = true;
}

int64
FixGenerationFloor(SharedState *state)
{
	if (!state->floor_ready)
	{
		LWLockAcquire(state->reservation_lock, LW_EXCLUSIVE);
		FixFloorLocked(state);
		LWLockRelease(state->reservation_lock);
	}
	pg_read_barrier();
	return state->floor_timestamp;
}

int64
EarlierIdsReachUnixMs(SharedState *state)
{
	int64		reservation_unix_ms = -1;

	if (state->floor_ready)
	{
		pg_read_barrier();
		if (state->floor_from_reservation)
			reservation_unix_ms = ToUnixMs(state->floor_timestamp - 1);
	}
	else if (state->reservation_known)
		reservation_unix_ms = ToUnixMs(ReservedUntil(state));
	return snowflake::EarlierIdsReachUnixMs(state->started_unix_ms, reservation_unix_ms);
}

int64
GenerationFloorOrNow(SharedState *state)
{
	if (!state->floor_ready)
		return NowTimestamp();
	pg_read_barrier();
	return state->floor_timestamp;
}

void
ExtendReservation(SharedState *state, int64 needed, int64 wanted)
{
	int64		until;
	XLogRecPtr	lsn;

	needed = WithinLayout(needed);
	wanted = WithinLayout(wanted);
	Assert(wanted >= needed);
	LWLockAcquire(state->reservation_lock, LW_EXCLUSIVE);
	FixFloorLocked(state);
	if (state->durable_until < needed)
	{
		int64		target = wanted;

		state->durable_lsn = LogReservation(ToUnixMs(target));
		WriteReservationFile(ToUnixMs(target));
		state->durable_until = target;
		state->reservation_known = true;
		pg_atomic_fetch_add_u64(&state->reservations, 1);
	}
	until = state->durable_until;
	lsn = state->durable_lsn;
	LWLockRelease(state->reservation_lock);

	/*
	 * Outside the lock, because it may wait long: with synchronous standbys,
	 * a failover target must know the reservation before anything uses it.
	 */
	if (!XLogRecPtrIsInvalid(lsn))
		WaitForSynchronousStandbys(lsn);
	RaiseReservedUntil(state, until);
}

void
RecordIssuedAtExit(int code, Datum arg)
{
	SharedState *state = reinterpret_cast<SharedState *>(DatumGetPointer(arg));
	char		path[MAXPGPATH];

	/* A crash (code 1) leaves the reservation, which WAL replay may raise. */
	if (code != 0 || !state->floor_ready)
		return;

	int64		newest = NewestIssuedTimestamp(state);

	if (newest < 0 || newest >= state->durable_until)
		return;

	int64		unix_ms = ToUnixMs(newest);

	/* On failure the file keeps the reservation, which is safe. */
	if (snprintf(path, sizeof(path), "%s/%s", DataDir, kReservationFileName) < MAXPGPATH)
		WriteStateFile(path, &unix_ms, 1, LOG);
}
