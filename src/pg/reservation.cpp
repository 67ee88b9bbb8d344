/*
 * reservation.cpp
 *	  Loading, replaying and extending the durable reservation, and fixing
 *	  the generation floor.
 *
 * Invariant: a timestamp is published in reserved_until (and so usable by
 * the hot path) only after a WAL record covering it was flushed, any
 * synchronous standby confirmed it, and the file says at least as much.
 * The file only ever grows: durable_until, guarded by reservation_lock,
 * is the largest value written, and a new record always exceeds it.
 */
#include "postgres_headers.hpp"

#include <cstdio>

#include "clock.hpp"
#include "durable_file.hpp"
#include "layout_file.hpp"
#include "reservation.hpp"
#include "reservation_wal.hpp"
#include "settings.hpp"

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

static bool
ReadReservationFile(int64 *unix_ms, int elevel)
{
	char	   *path = DataDirectoryFile(kReservationFileName);
	char		line[64];
	long long	value;

	if (!ReadSmallFile(path, line, sizeof(line), elevel))
		return false;
	if (sscanf(line, "%lld", &value) != 1)
		ereport(elevel,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("file \"%s\" does not hold a snowflake reservation", path)));
	*unix_ms = value;
	return true;
}

static void
WriteReservationFile(int64 unix_ms)
{
	WriteFileDurably(DataDirectoryFile(kReservationFileName),
					 psprintf("%lld\n", static_cast<long long>(unix_ms)), ERROR);
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

void
LoadReservation(SharedState *state)
{
	int64		unix_ms = 0;

	state->reservation_known = ReadReservationFile(&unix_ms, FATAL);
	pg_atomic_init_u64(&state->reserved_until,
					   static_cast<uint64>(state->reservation_known ? ToTimestamp(unix_ms) : 0));
	state->durable_until = ReservedUntil(state);
	state->durable_lsn = InvalidXLogRecPtr;
	state->floor_ready = false;
	state->floor_from_reservation = false;
	state->floor_timestamp = 0;
}

void
ReplayReservation(int64 until_unix_ms)
{
	SharedState *state = RequireSharedState();
	int64		timestamp = ToTimestamp(until_unix_ms);

	state->reservation_known = true;
	if (!RaiseReservedUntil(state, timestamp))
		return;
	state->durable_until = timestamp;
	/* Replay is the only writer now; the file keeps what recovery skips. */
	WriteReservationFile(until_unix_ms);
}

/* Caller holds reservation_lock; recovery has ended. */
static void
FixFloorLocked(SharedState *state)
{
	if (state->floor_ready)
		return;
	state->floor_from_reservation = state->reservation_known;
	if (state->reservation_known)
		state->floor_timestamp = ReservedUntil(state) + 1;
	else if (g_new_data_directory)
	{
		/* Nothing was ever issued here: the clock is the only bound. */
		state->floor_timestamp = state->started_unix_ms - g_settings.layout.epoch_ms;
	}
	else
	{
		/*
		 * Nothing was reserved, but IDs may have been issued (an upgrade
		 * from a version without reservations, or the file was removed):
		 * none can reach beyond the start time + max_drift.
		 */
		state->floor_timestamp = state->started_unix_ms - g_settings.layout.epoch_ms +
			g_settings.max_drift_ms + 1;
	}
	pg_write_barrier();
	state->floor_ready = true;
}

int64
GenerationFloor(SharedState *state)
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
GenerationFloorOrNow(SharedState *state)
{
	if (!state->floor_ready)
		return NowTimestamp();
	pg_read_barrier();
	return state->floor_timestamp;
}

/*
 * Whether synchronous_standby_names names standbys, as the checkpointer
 * last published it for the whole server (a waiting process cannot reload
 * its own copy of the setting); before it has, this process's own copy.
 */
static bool
SynchronousStandbysDefined(void)
{
	bool		defined;

	LWLockAcquire(SyncRepLock, LW_SHARED);
#ifdef SYNC_STANDBY_DEFINED
	if (WalSndCtl->sync_standbys_status & SYNC_STANDBY_INIT)
		defined = (WalSndCtl->sync_standbys_status & SYNC_STANDBY_DEFINED) != 0;
	else
		defined = SyncRepStandbyNames != nullptr && SyncRepStandbyNames[0] != '\0';
#else
	defined = WalSndCtl->sync_standbys_defined;
#endif
	LWLockRelease(SyncRepLock);
	return defined;
}

/*
 * Waits until the synchronous standbys, if synchronous_standby_names names
 * any, have flushed WAL up to "lsn", so that a standby promoted in a
 * failover knows every reservation an ID used.
 *
 * This is decided for the whole server, never by the calling session's
 * synchronous_commit: a session that turned it off must not publish a
 * reservation for every session.  So SyncRepWaitForLSN(), which follows
 * that setting, is not used; the wait polls the position up to which the
 * standbys confirmed, with a growing pause (the walsenders wake only
 * queued waiters), and answers cancel and termination requests.
 */
static void
WaitForSynchronousStandbys(XLogRecPtr lsn)
{
	long		pause_ms = 1;

	for (;;)
	{
		if (!SynchronousStandbysDefined())
			return;

		LWLockAcquire(SyncRepLock, LW_SHARED);
		XLogRecPtr	confirmed = WalSndCtl->lsn[SYNC_REP_WAIT_FLUSH];

		LWLockRelease(SyncRepLock);
		if (confirmed >= lsn)
			return;

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 pause_ms, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		pause_ms = Min(pause_ms * 2, 100);
	}
}

void
ExtendReservation(SharedState *state, int64 needed, int64 wanted)
{
	int64		until;
	XLogRecPtr	lsn;

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
