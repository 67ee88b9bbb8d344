/*
 * horizon.hpp
 *	  When a layout's timestamp bits run out, when to warn about it, and
 *	  keeping a reservation within them.
 *
 * A layout expresses the milliseconds from its epoch up to 2^timestamp_bits
 * past it; from then on no ID can be issued.  The default layout lasts about
 * 70 years, but each bit given to the fields below the timestamp halves
 * that, so a narrowed layout can run out within years or months.  The
 * reservation worker warns once a UTC day while less than
 * kHorizonWarningMs is left.
 */
#ifndef SNOWFLAKE_CORE_HORIZON_HPP
#define SNOWFLAKE_CORE_HORIZON_HPP

#include <cstdint>

#include "layout.hpp"

namespace snowflake {

constexpr int64_t kMsPerDay = 86400000;

/* Below this much time left, the server log warns (365 days). */
constexpr int64_t kHorizonWarningMs = 365 * kMsPerDay;

/* No warning was logged yet: a day before every day a clock can show. */
constexpr int64_t kNeverWarnedDay = INT64_MIN;

/*
 * The layout's horizon: the Unix time (ms) of the first millisecond it
 * cannot express, 2^timestamp_bits ms past its epoch.
 */
int64_t HorizonUnixMs(const Layout &layout);

/* Milliseconds from "now_unix_ms" to the horizon; 0 once it has passed. */
int64_t MsUntilHorizon(const Layout &layout, int64_t now_unix_ms);

/* The UTC day number of a Unix time (ms): days since 1970-01-01, floored. */
int64_t UnixDay(int64_t unix_ms);

/*
 * Whether to warn now about the horizon: less than kHorizonWarningMs is
 * left, and the last warning ("last_warned_day", a UnixDay(), or
 * kNeverWarnedDay) was on an earlier UTC day.  A clock stepped back into an
 * earlier day does not warn again.
 */
bool HorizonWarningDue(const Layout &layout, int64_t now_unix_ms, int64_t last_warned_day);

/*
 * "timestamp" (ms since the layout's epoch), lowered to the layout's last
 * millisecond if it lies past it.  A reservation there promises no more
 * (no ID can have a later timestamp), and a start can read it back.
 */
int64_t ClampTimestampToLayout(const Layout &layout, int64_t timestamp);

/* The same for a Unix time (ms): at most the layout's LastUnixMs(). */
int64_t ClampUnixMsToLayout(const Layout &layout, int64_t unix_ms);

} /* namespace snowflake */

#endif /* SNOWFLAKE_CORE_HORIZON_HPP */
