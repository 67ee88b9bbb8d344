/*
 * reservation_worker.cpp
 *	  Main loop of the "snowflake reservation" background worker.
 */
extern "C"
{
#include "postgres.h"

#include "access/xlog.h"		/* RecoveryInProgress */
#include "miscadmin.h"
#include "port/atomics.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"	/* SignalHandlerForConfigReload */
#include "storage/latch.h"
#include "tcop/tcopprot.h"	/* die */
#include "utils/guc.h"		/* ProcessConfigFile */
#include "utils/memutils.h"
#include "utils/timestamp.h"	/* timestamptz_to_str */
#include "utils/wait_event.h"
}

#include "core/horizon.hpp"
#include "core/layout.hpp"
#include "pg/clock.hpp"
#include "pg/reservation/reservation.hpp"
#include "pg/reservation/reservation_worker.hpp"
#include "pg/settings.hpp"
#include "pg/timestamps.hpp"


static constexpr long kTickMs = 50;

/* After the last new ID, how long the reservation keeps ahead of the clock. */
static constexpr int64 kActiveWindowUs = 10 * INT64CONST(1000000);

/* Backward steps smaller than this are clock noise, not steps. */
static constexpr int64 kStepThresholdUs = 1000;

/*
 * Keeps the reservation between half and all of reserve_ahead past the
 * newest ID, so generating sessions do not stop to extend it; and, while
 * IDs were issued within the last kActiveWindowUs, past the clock too, so
 * a session issuing IDs now and then does not stop either.  Writes nothing
 * once generation has stopped for that long.
 */
static void
KeepReservationAhead(SharedState *state, int64 *newest_seen, int64 *active_until_us)
{
	int64		newest = NewestIssuedTimestamp(state);
	int64		now_us = NowMonotonicUs();
	int64		half = g_settings.reserve_ahead_ms / 2;

	if (newest < 0)
		return;
	if (newest != *newest_seen)
	{
		*newest_seen = newest;
		*active_until_us = now_us + kActiveWindowUs;
	}

	int64		front = newest;

	if (now_us < *active_until_us)
		front = Max(front, NowTimestamp());
	if (front + half > ReservedUntil(state))
		ExtendReservation(state, front + half + 1, front + g_settings.reserve_ahead_ms);
}

/*
 * The wall clock minus the monotonic clock changes only when the wall clock
 * is stepped (or slewed, by far less than kStepThresholdUs per tick).
 */
static void
ObserveClockSteps(SharedState *state, int64 *previous_offset_us)
{
	int64		offset_us = NowUnixUs() - NowMonotonicUs();
	int64		back_us = *previous_offset_us - offset_us;

	*previous_offset_us = offset_us;
	if (back_us < kStepThresholdUs)
		return;

	uint64		back_ms = static_cast<uint64>(back_us / 1000);

	pg_atomic_fetch_add_u64(&state->clock_steps_back, 1);
	if (back_ms > pg_atomic_read_u64(&state->largest_step_back_ms))
		pg_atomic_write_u64(&state->largest_step_back_ms, back_ms);
	ereport(LOG,
			(errmsg("snowflake: the system clock stepped back by " INT64_FORMAT " ms",
					static_cast<int64>(back_ms))));
}

/*
 * Warns once a UTC day, from this worker's start, while the running layout
 * has less than a year of timestamps left; "last_warned_day" is the day of
 * the last warning.  Arithmetic on the settings only: no catalog.
 */
static void
WarnOfHorizon(int64 *last_warned_day)
{
	const snowflake::Layout &layout = g_settings.layout;
	int64 now_unix_ms = NowUnixMs();

	if (!snowflake::HorizonWarningDue(layout, now_unix_ms, *last_warned_day))
		return;
	*last_warned_day = snowflake::UnixDay(now_unix_ms);

	long long days = snowflake::MsUntilHorizon(layout, now_unix_ms) / snowflake::kMsPerDay;

	ereport(WARNING,
			(errmsg_plural("the snowflake layout runs out of timestamps in %lld day",
						   "the snowflake layout runs out of timestamps in %lld days", days,
						   days),
			 errdetail("Its last millisecond is %s; from then on no ID can be issued.",
					   timestamptz_to_str(UnixMsToTimestampTz(layout.LastUnixMs()))),
			 errhint("See \"Changing the layout\" in the snowflake documentation.")));
}

void
snowflake_reservation_main(Datum arg)
{
	(void) arg;
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	/* No database: the worker needs WAL and shared memory only. */
	BackgroundWorkerInitializeConnection(nullptr, nullptr, 0);

	SharedState *state = RequireSharedState();
	int64		previous_offset_us = NowUnixUs() - NowMonotonicUs();
	int64		newest_seen = -1;
	int64		active_until_us = 0;
	int64		last_warned_day = snowflake::kNeverWarnedDay;

	/* The worker runs for months: what a tick allocates goes with it. */
	MemoryContext tick_context = AllocSetContextCreate(TopMemoryContext,
													   "snowflake reservation tick",
													   ALLOCSET_SMALL_SIZES);

	/*
	 * Fix the floor now, not at the first ID: that makes the first-ID
	 * records and the reservation file as soon as the server has started.
	 */
	if (!RecoveryInProgress())
		(void) FixGenerationFloor(state);

	for (;;)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 kTickMs, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		MemoryContextReset(tick_context);

		MemoryContext previous = MemoryContextSwitchTo(tick_context);

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		ObserveClockSteps(state, &previous_offset_us);
		KeepReservationAhead(state, &newest_seen, &active_until_us);
		WarnOfHorizon(&last_warned_day);
		MemoryContextSwitchTo(previous);
	}
}
