/*
 * reach_ahead.cpp
 *	  The bound on the IDs of earlier runs (see reach_ahead.hpp).
 */
#include "reach_ahead.hpp"

#include <algorithm>
#include <cstdint>

namespace snowflake {

int64_t
EarlierIdsReachUnixMs(int64_t start_unix_ms, int64_t reservation_unix_ms)
{
	return std::max(start_unix_ms + kMaxReachAheadMs, reservation_unix_ms);
}

}							/* namespace snowflake */
