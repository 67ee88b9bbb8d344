/*
 * reach_ahead.hpp
 *	  How far past the wall clock the IDs of an earlier run of the server
 *	  can reach.
 *
 * A run issues IDs up to its reservation, which lies at most
 * snowflake.reserve_ahead past the newest ID, which lies at most
 * snowflake.max_drift past the clock.  Both settings have fixed upper
 * bounds, so every ID issued before a start lies at most kMaxReachAheadMs
 * past that start's clock, unless the clock was stepped back since: then
 * the reservation the data directory recorded bounds them.
 */
#ifndef SNOWFLAKE_CORE_REACH_AHEAD_HPP
#define SNOWFLAKE_CORE_REACH_AHEAD_HPP

#include <cstdint>

namespace snowflake {

/* Upper bound of snowflake.max_drift (24 h); also bounds drift of older runs. */
constexpr int kMaxDriftLimitMs = 86400000;

/* Upper bound of snowflake.reserve_ahead. */
constexpr int kMaxReserveAheadMs = 60000;

/*
 * How far past the wall clock at a server start any ID of an earlier run can
 * reach: its drift plus the reservation ahead of it.
 */
constexpr int64_t kMaxReachAheadMs = int64_t{kMaxDriftLimitMs} + kMaxReserveAheadMs;

/*
 * The latest Unix time (ms) the timestamp of an ID issued before a server
 * start at "start_unix_ms" can have: kMaxReachAheadMs past the start (the
 * furthest any run can reach ahead of its clock), or the reservation the
 * data directory recorded ("reservation_unix_ms", -1 if none), if that lies
 * further, as it can after the clock was stepped back by more.
 */
int64_t		EarlierIdsReachUnixMs(int64_t start_unix_ms, int64_t reservation_unix_ms);

}							/* namespace snowflake */

#endif							/* SNOWFLAKE_CORE_REACH_AHEAD_HPP */
