/*
 * time_range.cpp
 *	  The smallest and largest IDs on one side of a millisecond, segment by
 *	  segment of a layout history.
 */
#include "time_range.hpp"

#include <cstdint>

namespace snowflake {

namespace {

/* IDs [lo, hi] that segment i decodes, both non-negative. */
void
SegmentIds(const LayoutSegment *segments, int count, int i, int64_t *lo, int64_t *hi)
{
	*lo = i == 0 ? 0 : segments[i].first_id;
	*hi = i + 1 < count ? segments[i + 1].first_id - 1 : INT64_MAX;
}

/*
 * The millisecond offset "ms" from the epoch, shifted into ID space,
 * saturating at INT64_MAX.  "ms" is not negative.
 */
int64_t
ShiftedOrMax(int64_t ms, int shift)
{
	if (ms > (INT64_MAX >> shift))
		return INT64_MAX;
	return ms << shift;
}

}							/* namespace */

int64_t
UnixMsOfId(const LayoutSegment *segments, int count, int64_t id)
{
	int			i = count - 1;

	while (i > 0 && segments[i].first_id > id)
		i--;
	const Layout &layout = segments[i].layout;

	return layout.epoch_ms + (id >> layout.TimestampShift());
}

int64_t
LowestIdFromMs(const LayoutSegment *segments, int count, int64_t unix_ms)
{
	for (int i = 0; i < count; i++)
	{
		int64_t		lo;
		int64_t		hi;

		SegmentIds(segments, count, i, &lo, &hi);
		if (hi < lo)
			continue;

		const Layout &layout = segments[i].layout;
		int64_t		candidate = lo;

		/* Offsets past the top of int64 have no ID here. */
		if (unix_ms > layout.epoch_ms)
		{
			if (unix_ms - layout.epoch_ms > layout.MaxTimestamp())
				continue;
			candidate = ShiftedOrMax(unix_ms - layout.epoch_ms, layout.TimestampShift());
			if (candidate < lo)
				candidate = lo;
		}
		/* Segments are in ID order: the first that has one has the smallest. */
		if (candidate <= hi)
			return candidate;
	}
	return -1;
}

int64_t
HighestIdUntilMs(const LayoutSegment *segments, int count, int64_t unix_ms)
{
	for (int i = count - 1; i >= 0; i--)
	{
		int64_t		lo;
		int64_t		hi;

		SegmentIds(segments, count, i, &lo, &hi);
		if (hi < lo)
			continue;

		const Layout &layout = segments[i].layout;

		if (unix_ms < layout.epoch_ms)
			continue;

		int64_t		offset = unix_ms - layout.epoch_ms;
		int64_t		candidate;

		/* The last ID of millisecond "offset": one below the next one's first. */
		if (offset >= layout.MaxTimestamp())
			candidate = INT64_MAX;
		else
			candidate = ShiftedOrMax(offset + 1, layout.TimestampShift()) - 1;
		if (candidate > hi)
			candidate = hi;
		if (candidate >= lo)
			return candidate;
	}
	return -1;
}

}							/* namespace snowflake */
