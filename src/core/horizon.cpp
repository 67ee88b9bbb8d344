/*
 * horizon.cpp
 *	  The layout's horizon and its daily warning (see horizon.hpp).
 */
#include "horizon.hpp"

#include <cstdint>

namespace snowflake {

int64_t
HorizonUnixMs(const Layout &layout)
{
	return layout.LastUnixMs() + 1;
}

int64_t
MsUntilHorizon(const Layout &layout, int64_t now_unix_ms)
{
	int64_t left = HorizonUnixMs(layout) - now_unix_ms;

	return left > 0 ? left : 0;
}

int64_t
UnixDay(int64_t unix_ms)
{
	int64_t day = unix_ms / kMsPerDay;

	/* Floor, not truncation, before 1970. */
	return (unix_ms % kMsPerDay < 0) ? day - 1 : day;
}

bool
HorizonWarningDue(const Layout &layout, int64_t now_unix_ms, int64_t last_warned_day)
{
	return MsUntilHorizon(layout, now_unix_ms) < kHorizonWarningMs &&
		UnixDay(now_unix_ms) > last_warned_day;
}

int64_t
ClampTimestampToLayout(const Layout &layout, int64_t timestamp)
{
	return timestamp < layout.MaxTimestamp() ? timestamp : layout.MaxTimestamp();
}

int64_t
ClampUnixMsToLayout(const Layout &layout, int64_t unix_ms)
{
	return unix_ms < layout.LastUnixMs() ? unix_ms : layout.LastUnixMs();
}

} /* namespace snowflake */
