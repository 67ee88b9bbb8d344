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
#include "postmaster/interrupt.h"	/* ConfigReloadPending */
#include "utils/guc.h"		/* ProcessConfigFile */
#include "utils/memutils.h"
#include "utils/timestamp.h"	/* timestamptz_to_str */
#include "utils/wait_event.h"
}

#include "core/horizon.hpp"
#include "core/layout.hpp"
#include "pg/clock.hpp"
#include "pg/clock_watch.hpp"
#include "pg/primary_settings.hpp"
#include "pg/reservation/reservation.hpp"
#include "pg/reservation/reservation_worker.hpp"
#include "pg/settings.hpp"
#include "pg/timestamps.hpp"
#include "pg/worker_exit.hpp"


static constexpr long kTickMs = 50;

/* After the last new ID, how long the reservation keeps ahead of the clock. */
static constexpr int64 kActiveWindowUs = 10 * INT64CONST(1000000);

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
	/* Nothing past the layout's end: there it stops extending. */
	int64		needed = snowflake::ClampTimestampToLayout(g_settings.layout, front + half + 1);

	if (needed > ReservedUntil(state))
		ExtendReservation(state, needed, front + g_settings.reserve_ahead_ms);
}

/* The horizon's warning (README.md); "last_warned_day": the last one's day. */
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
	InstallWorkerSignalHandlers();
	BackgroundWorkerUnblockSignals();
	/* No database: the worker needs WAL and shared memory only. */
	BackgroundWorkerInitializeConnection(nullptr, nullptr, 0);

	SharedState *state = RequireSharedState();
	int64		newest_seen = -1;
	int64		active_until_us = 0;
	int64		last_warned_day = snowflake::kNeverWarnedDay;

	/* The worker runs for months: what a tick allocates goes with it. */
	MemoryContext tick_context = AllocSetContextCreate(TopMemoryContext,
													   "snowflake reservation tick",
													   ALLOCSET_SMALL_SIZES);

	/*
	 * The floor is fixed as soon as the server has started or been
	 * promoted, not at the first ID, so that its files are written early.
	 */
	bool		in_recovery = RecoveryInProgress();

	if (!in_recovery)
		(void) FixGenerationFloor(state);

	for (;;)
	{
		WaitForWorkOrExit(kTickMs);
		MemoryContextReset(tick_context);

		MemoryContext previous = MemoryContextSwitchTo(tick_context);

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		/* Once a run, as soon as the server writes WAL (after a promotion too). */
		LogPrimarySettingsOnce();
		/* Observe the clock every tick, so that a step is seen when it happens. */
		(void) ObserveClockUs();
		if (in_recovery && !RecoveryInProgress())
		{
			in_recovery = false;
			(void) FixGenerationFloor(state);
		}
		if (!in_recovery)
			KeepReservationAhead(state, &newest_seen, &active_until_us);
		WarnOfHorizon(&last_warned_day);
		MemoryContextSwitchTo(previous);
	}
}
