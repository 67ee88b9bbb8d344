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
NowUnixUs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return static_cast<int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

inline int64_t
NowUnixMs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

/* A clock that never steps: for timeouts, and to detect wall-clock steps. */
inline int64_t
NowMonotonicUs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return static_cast<int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

/*
 * A clock that never steps and counts suspend: a wall-clock step is a
 * change of the wall clock against it (pg/clock_watch.hpp).
 */
inline int64_t
NowBootUs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return static_cast<int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

#endif							/* SNOWFLAKE_PG_CLOCK_HPP */
