/*
 * nextval.cpp
 *	  snowflake_nextval() and snowflake_release_worker().
 *
 * The first call in a session does the slow work once (PrepareGenerator);
 * every later call is the hot path (README.md), left only to wait for the
 * clock or, rarely, to extend the reservation the background worker has not.
 */
extern "C"
{
#include "postgres.h"

#include "access/parallel.h"	/* IsParallelWorker */
#include "access/xlog.h"		/* RecoveryInProgress */
#include "fmgr.h"
#include "miscadmin.h"		/* CHECK_FOR_INTERRUPTS */
#include "port/atomics.h"
#include "storage/spin.h"		/* pg_spin_delay */
#include "utils/timestamp.h"
}

#include "core/generator.hpp"
#include "pg/clock_watch.hpp"
#include "pg/slots/nextval.hpp"
#include "pg/clock.hpp"
#include "pg/layout/confirmed_layouts.hpp"
#include "pg/layout/layout_registry.hpp"
#include "pg/old_versions.hpp"
#include "pg/registry/clock_skew.hpp"
#include "pg/registry/node_registry.hpp"
#include "pg/registry/registry_slots.hpp"
#include "pg/reservation/reservation.hpp"
#include "pg/settings.hpp"
#include "pg/shared_state.hpp"
#include "pg/timestamps.hpp"
#include "pg/slots/worker_slot.hpp"

extern "C"
{
PG_FUNCTION_INFO_V1(snowflake_nextval);
PG_FUNCTION_INFO_V1(snowflake_release_worker);
}

/* The sleep quantum while waiting for the clock; keeps waits cancellable. */
static constexpr int64 kMaxSleepUs = 10000;

/*
 * At max_drift = 0, the last stretch of a wait is spent reading the clock
 * instead of sleeping.  There a session that used up a millisecond waits
 * for the next one, and a sleep, which overshoots by tens of microseconds
 * or more, loses that millisecond's IDs if it wakes too late to issue them
 * all.  With max_drift >= 1 the next ID lies ahead of the clock, so only
 * an overshoot of more than max_drift would skip timestamps, and sleeping
 * saves a CPU for as long as the session stays at the drift bound.
 */
static constexpr int64 kSpinUs = 1000;

/* The slot's mark, as the core's cell: a thin adapter over the atomic. */
struct SlotMarkCell
{
	pg_atomic_uint64 *word;

	uint64		Load() const { return pg_atomic_read_u64(word); }
	bool		CompareExchange(uint64 &expected, uint64 desired)
	{
		return pg_atomic_compare_exchange_u64(word, &expected, desired);
	}
};

static snowflake::SlotGenerator generator;
static SharedState *state = nullptr;
static WorkerSlot *slot = nullptr;	/* the slot this session is attached to */
static SlotMarkCell mark_cell;
static SessionAttachment *attachment = nullptr;
static uint64 ids_from_slot = 0;	/* issued since attaching */

/* The last ID this session issued, under any slot; 0 before the first. */
static int64 own_last_id = 0;

static void
RefuseOutsidePrimaryLeader(void)
{
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot generate snowflake IDs during recovery"),
				 errhint("snowflake_nextval() works only on a primary; "
						 "snowflake_decode() works everywhere.")));
	if (IsParallelWorker())
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TRANSACTION_STATE),
				 errmsg("cannot call snowflake_nextval() in a parallel worker")));
}

/*
 * Logs, once per server start, that the clock is behind the reservation the
 * server resumed from: IDs then run ahead of the clock, or wait for it.  A
 * WARNING when they wait (the gap exceeds max_drift) or when the floor is
 * not the newest ID of a clean shutdown (a crash, a promotion); otherwise
 * the gap is the borrow of max_drift by the last IDs before a clean
 * restart, normal operation, and a LOG line with the same numbers.
 */
static void
ReportClockBehindFloor(int64 floor)
{
	int64		gap_ms = floor - 1 - NowTimestamp();
	uint32		expected = 0;

	/* A floor past the layout's end: no wait helps, and the call fails with 54000. */
	if (gap_ms <= 0 || !state->floor_from_reservation ||
		floor > g_settings.layout.MaxTimestamp() ||
		!pg_atomic_compare_exchange_u32(&state->gap_reported, &expected, 1))
		return;

	bool waits = gap_ms > g_settings.max_drift_ms;
	int level = waits || !state->floor_after_clean_shutdown ? WARNING : LOG;

	ereport(level,
			(errmsg("system clock is " INT64_FORMAT " ms behind the snowflake reservation",
					gap_ms),
			 errdetail("IDs continue above the reservation, which ends at %s.",
					   timestamptz_to_str(
						   UnixMsToTimestampTz(floor - 1 + g_settings.layout.epoch_ms))),
			 waits ?
				 (g_settings.on_clock_behind == kClockBehindRide ?
					  errhint("snowflake.on_clock_behind is 'ride': IDs continue above the "
							  "reservation without waiting, their timestamps ahead of the "
							  "clock (drift_ms in snowflake_status()).") :
					  errhint(
						  "snowflake_nextval() waits up to snowflake.clock_wait_timeout "
						  "for the clock to come within snowflake.max_drift of them; "
						  "to issue IDs without waiting, set "
						  "snowflake.on_clock_behind = 'ride' and reload.")) :
				 0));
}

/*
 * Attaches to a slot and raises its mark so that its next ID lies above the
 * floor (the reservation this server resumed from), above the newest
 * millisecond of any slot (after the clock stepped back, a slot must not
 * fall behind the others), and, under this slot's worker id, above every ID
 * this session issued before (it may have used another slot).  The mark
 * only ever rises, so the slot's other sessions lose nothing.
 */
static void
AcquireGenerator(void)
{
	const snowflake::Layout &layout = g_settings.layout;
	uint32		worker_id;
	int64		floor = FixGenerationFloor(state);

	ReportClockBehindFloor(floor);

	WorkerSlot *attached = AttachWorkerSlot(state, &worker_id, &attachment);

	generator.Start(layout, static_cast<uint32_t>(g_settings.node_id), worker_id,
					g_settings.max_drift_ms);
	mark_cell.word = &attached->last_id;

	snowflake::Mark after = snowflake::MarkBefore(layout, floor);
	snowflake::Mark newest = snowflake::MarkBefore(layout, NewestIssuedTimestamp(state));

	if (after < newest)
		after = newest;
	if (own_last_id != 0)
	{
		snowflake::Mark own{snowflake::Decompose(layout, own_last_id).timestamp,
							layout.MaxSequence()};

		if (after < own)
			after = own;
	}
	generator.Raise(mark_cell, after);
	ids_from_slot = 0;
	slot = attached;
}

[[noreturn]] static void
ReportClockTooFarBehind(int64 target_unix_ms)
{
	int64 behind_ms = target_unix_ms + g_settings.max_drift_ms - TrustedNowUnixMs();

	/*
	 * The next ID lies ahead of a clock that is right: the IDs before it
	 * took their time from a clock that was ahead, or the clock stepped
	 * back.  Correcting the clock is not the way out; riding it out is.
	 */
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("system clock is " INT64_FORMAT " ms behind the next snowflake ID",
					behind_ms),
			 errdetail("snowflake_nextval() waited %d ms (snowflake.clock_wait_timeout) "
					   "for the clock to come within snowflake.max_drift (%d ms) of it; "
					   "earlier IDs were issued under a clock that was ahead, or the "
					   "clock stepped back.",
					   g_settings.clock_wait_timeout_ms, g_settings.max_drift_ms),
			 errhint("Set snowflake.on_clock_behind = 'ride' and reload to issue IDs "
					 "above the newest one without waiting (see \"A poisoned future\" in "
					 "the snowflake documentation), or wait until the clock reaches them; "
					 "raising snowflake.clock_wait_timeout bridges a short gap only.")));
}

/*
 * Waits until the wall clock reaches "target_unix_ms", for at most
 * snowflake.clock_wait_timeout (measured on the monotonic clock, which
 * steps do not move): sleeps in steps of at most kMaxSleepUs; at
 * max_drift = 0 it reads the clock through the last kSpinUs instead, so
 * that it returns within microseconds of the target.  Never holds a lock.
 */
static void
WaitForClock(int64 target_unix_ms)
{
	int64		deadline_us = NowMonotonicUs() +
		int64{g_settings.clock_wait_timeout_ms} * 1000;
	int64		spin_us = g_settings.max_drift_ms == 0 ? kSpinUs : 0;

	pg_atomic_fetch_add_u64(&slot->overflow_waits, 1);
	for (;;)
	{
		/* The target lies below the next ID: a pending step is trusted as far. */
		int64 target_us = target_unix_ms * 1000;
		int64 remaining_us = target_us - ObserveClockUs(target_us);
		int64		allowed_us = deadline_us - NowMonotonicUs();

		if (remaining_us <= 0)
			return;
		if (allowed_us <= 0)
			ReportClockTooFarBehind(target_unix_ms);
		if (remaining_us > spin_us)
			pg_usleep(Min(Min(remaining_us - spin_us, allowed_us), kMaxSleepUs));
		else
			pg_spin_delay();
		CHECK_FOR_INTERRUPTS();
	}
}

[[noreturn]] static void
ReportExhausted(void)
{
	const snowflake::Layout &layout = g_settings.layout;

	const char *last = timestamptz_to_str(UnixMsToTimestampTz(layout.LastUnixMs()));

	/* Before the end by the clock: IDs ran ahead, or a start resumed from a reservation at it. */
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("the snowflake layout has run out of timestamps"),
			 NowUnixMs() <= layout.LastUnixMs() ?
				 errdetail("Its last millisecond is %s, ahead of the clock, but every "
						   "timestamp up to it may be in use: IDs ran ahead of the clock, "
						   "or this server resumed from a reservation that reaches it.",
						   last) :
				 errdetail("Its last millisecond was %s.", last),
			 errhint("See \"Changing the layout\" in the snowflake documentation.")));
}

/*
 * Up to "want" consecutive IDs of one millisecond; the first is returned,
 * *count says how many.  Single calls take runs of one.
 */
pg_attribute_always_inline static int64
NextRun(uint32 want, uint32 *count)
{
	const int64 epoch_ms = g_settings.layout.epoch_ms;
	int64		result;
	int64 now = NowTimestamp();

	for (;;)
	{
		switch (
			generator.NextRun(mark_cell, now, ReservedUntil(state), want, &result, count))
		{
			case snowflake::Outcome::kIssued:
				ids_from_slot += *count;
				pg_atomic_write_u64(&attachment->ids_issued, ids_from_slot);
				own_last_id = result + (*count - 1);
				return result;
			case snowflake::Outcome::kWait:
				/*
				 * Riding it out: the next ID's timestamp stands in for the
				 * clock, so timestamps advance with the IDs, still above
				 * the mark and within the reservation.
				 */
				if (g_settings.on_clock_behind == kClockBehindRide)
					now = result;
				else
				{
					WaitForClock(result + epoch_ms);
					now = NowTimestamp();
				}
				break;
			case snowflake::Outcome::kReserve:
				ExtendReservation(state, result,
								  Max(result, NowTimestamp()) +
								  g_settings.reserve_ahead_ms);
				now = Max(now, NowTimestamp());
				break;
			case snowflake::Outcome::kExhausted:
				ReportExhausted();
		}
	}
}

/*
 * The slow path, taken by the first call of a session, after an abort that
 * undid the recording of the layout, and while a node-id collision blocks
 * generation.  The first call also warns when this database's extension is
 * older than the library.
 */
static void
PrepareGenerator(Oid fn_oid)
{
	state = RequireSharedState();
	RefuseOutsidePrimaryLeader();

	/*
	 * An earlier session found this extension at the library's version and
	 * the running layout recorded: a new connection's first ID then reads
	 * no catalog (layout/confirmed_layouts.hpp).
	 */
	bool		confirmed_earlier = !g_layout_confirmed && LayoutConfirmedEarlier(fn_oid);
	bool		outdated = !confirmed_earlier && WarnOnceIfExtensionOutdated();

	RequestRegistryOnceIfMissing();
	uint32 findings = pg_atomic_read_u32(&state->registry_findings);

	if ((findings & kFindingNodeCollision) != 0 &&
		g_settings.on_node_collision == kCollisionError)
		ReportGenerationBlocked(state);
	if ((findings & kFindingClockSkew) != 0 && g_settings.on_clock_skew == kClockSkewRefuse)
		ReportClockSkewRefusal(state);
	if (confirmed_earlier)
		g_layout_confirmed = true;
	else if (!g_layout_confirmed)
	{
		EnsureRunningLayoutRecorded(fn_oid);
		/*
		 * The warning's answer is the session's first; the extension may
		 * have been dropped and created at another version since.  Share
		 * only what this transaction read.
		 */
		if (!outdated && OutdatedExtensionVersion() == nullptr)
			ShareLayoutConfirmation(fn_oid, CommittedLayoutTable());
	}
	if (slot == nullptr)
		AcquireGenerator();
}

/*
 * Inlined into snowflake_nextval(), so that with a run of one the
 * compiler folds the run arithmetic away: an exported function would be
 * called through the PLT, never inlined, in a library built with -fPIC.
 */
pg_attribute_always_inline static int64
SessionRun(Oid fn_oid, uint32 want, uint32 *count)
{
	/*
	 * An attached slot implies "state" is set; the flag shares reserved_until's
	 * line.  Under a collision or a clock skew every call takes the slow
	 * path, which applies this session's snowflake.on_node_collision and
	 * snowflake.on_clock_skew.
	 */
	if (unlikely(slot == nullptr || !g_layout_confirmed ||
				 pg_atomic_read_u32(&state->registry_findings) != 0))
		PrepareGenerator(fn_oid);
	return NextRun(want, count);
}

int64
NextSessionRun(Oid fn_oid, uint32 want, uint32 *count)
{
	return SessionRun(fn_oid, want, count);
}

int64
SessionLastId(void)
{
	return own_last_id;
}

extern "C" Datum
snowflake_nextval(PG_FUNCTION_ARGS)
{
	uint32		count;

	PG_RETURN_INT64(SessionRun(fcinfo->flinfo->fn_oid, 1, &count));
}

extern "C" Datum
snowflake_release_worker(PG_FUNCTION_ARGS)
{
	(void) fcinfo;
	RequireSharedState();
	if (slot == nullptr)
		PG_RETURN_BOOL(false);

	slot = nullptr;
	attachment = nullptr;
	PG_RETURN_BOOL(DetachWorkerSlot());
}
