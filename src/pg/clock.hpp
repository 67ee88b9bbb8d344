/*
 * clock.hpp
 *	  The wall clock, read the cheapest precise way.
 *
 * clock_gettime() is served by the vDSO on Linux, so reading a clock is not
 * a real system call.
 */
#ifndef SNOWFLAKE_PG_CLOCK_HPP
#define SNOWFLAKE_PG_CLOCK_HPP

#include <cstdint>
#include <ctime>

inline int64_t
ReadClockUs(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return static_cast<int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

inline int64_t
NowUnixUs(void)
{
	return ReadClockUs(CLOCK_REALTIME);
}

inline int64_t
NowUnixMs(void)
{
	return ReadClockUs(CLOCK_REALTIME) / 1000;
}

/* A clock that never steps: for timeouts, and to detect wall-clock steps. */
inline int64_t
NowMonotonicUs(void)
{
	return ReadClockUs(CLOCK_MONOTONIC);
}

/*
 * A clock that never steps and counts suspend: a wall-clock step is a
 * change of the wall clock against it (pg/clock_watch.hpp).
 */
inline int64_t
NowBootUs(void)
{
	return ReadClockUs(CLOCK_BOOTTIME);
}

#endif							/* SNOWFLAKE_PG_CLOCK_HPP */
