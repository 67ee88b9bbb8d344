/*
 * clock_watch.hpp
 *	  The trusted wall clock (src/pg/README.md, core/clock_steps.hpp).
 *
 * A step is seen by whoever reads the clock first after it, and is logged
 * and counted once, in shared memory.  Reading CLOCK_BOOTTIME costs as much
 * as the wall clock itself, so a process compares the clocks only when its
 * wall clock moved kClockRecheckMs or more (or back) since its last
 * comparison, and on every read while a step is pending: a smaller move is
 * no step beyond the threshold, whose least value is above kClockRecheckMs.
 */
#ifndef SNOWFLAKE_PG_CLOCK_WATCH_HPP
#define SNOWFLAKE_PG_CLOCK_WATCH_HPP

#include <cstdint>

#include "pg/clock.hpp"
#include "pg/settings.hpp"

struct SharedState;

constexpr int64_t kClockRecheckMs = 50;

/* This process's wall clock at its last comparison that found no step pending. */
extern int64_t g_clock_compared_ms;

constexpr int64_t kIdsReachNowhere = INT64_MIN;

/*
 * Compares both clocks now; returns the trusted Unix time in us.  A caller
 * waiting for the clock to reach IDs already issued passes how far they
 * reach: a pending step is trusted up to there (core/clock_steps.hpp).
 */
int64_t ObserveClockUs(int64_t ids_reach_unix_us = kIdsReachNowhere);

/* The trusted Unix time in ms: the hot path's clock. */
inline int64_t
TrustedNowUnixMs(void)
{
	int64_t now = NowUnixMs();

	if (__builtin_expect(static_cast<uint64_t>(now - g_clock_compared_ms) <
							 static_cast<uint64_t>(kClockRecheckMs),
						 1))
		return now;
	return ObserveClockUs() / 1000;
}

/*
 * The trusted Unix time in ms without comparing the clocks: for a process
 * that only reports the time (the registry's heartbeat) and so does not
 * judge steps; those that issue IDs, leases and the reservation do (the
 * reservation worker every 50 ms).
 */
int64_t PeekTrustedNowUnixMs(void);

/* The trusted wall clock in ms since the running layout's epoch. */
inline int64_t
NowTimestamp(void)
{
	return TrustedNowUnixMs() - g_settings.layout.epoch_ms;
}

/*
 * Sets up the clock's fields of freshly created shared memory: after a
 * crash restart from what the postmaster kept of the last memory, so a
 * step pending then stays pending.
 */
void InitClockWatch(SharedState *state);

/* The size of the pending forward step in ms, or -1 if none. */
int64_t PendingClockStepMs(SharedState *state);

#endif /* SNOWFLAKE_PG_CLOCK_WATCH_HPP */
