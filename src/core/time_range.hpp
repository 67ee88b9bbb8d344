/*
 * time_range.hpp
 *	  Which IDs carry a timestamp on one side of a given millisecond, under a
 *	  layout history.
 *
 * A history is a list of segments, sorted by first ID: segment i decodes
 * the IDs from its first_id up to the next segment's first_id (the first
 * segment also takes every ID below, the last one every ID above).  Inside
 * a segment an ID's millisecond is epoch + (id >> timestamp shift), which
 * never decreases as the ID grows.  Across segments it usually does not
 * either, but a history can leave IDs no node issued (between the old
 * layout's last possible ID and the new layout's first) that decode later
 * than the next segment's start.  So the answers here are the smallest and
 * largest IDs that match, and the planner keeps the comparison itself as a
 * recheck: the range is never narrower than the exact set.
 */
#ifndef SNOWFLAKE_CORE_TIME_RANGE_HPP
#define SNOWFLAKE_CORE_TIME_RANGE_HPP

#include <cstdint>
#include <type_traits>

#include "layout.hpp"

namespace snowflake {

struct LayoutSegment
{
	int64_t		first_id;
	Layout		layout;
};

static_assert(std::is_trivially_destructible_v<LayoutSegment>,
			  "src/pg keeps LayoutSegment in its static layout history and hands it "
			  "to frames that ereport(ERROR) leaves by longjmp");

/*
 * The smallest non-negative ID whose Unix millisecond is at least
 * "unix_ms", or -1 if there is none.
 */
int64_t		LowestIdFromMs(const LayoutSegment *segments, int count, int64_t unix_ms);

/*
 * The largest ID whose Unix millisecond is at most "unix_ms", or -1 if
 * there is none (no non-negative ID does).
 */
int64_t		HighestIdUntilMs(const LayoutSegment *segments, int count, int64_t unix_ms);

/* Unix ms of "id" under the segment that decodes it ("id" >= 0). */
int64_t		UnixMsOfId(const LayoutSegment *segments, int count, int64_t id);

}							/* namespace snowflake */

#endif							/* SNOWFLAKE_CORE_TIME_RANGE_HPP */
