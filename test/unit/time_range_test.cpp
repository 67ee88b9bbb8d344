/*
 * time_range_test.cpp
 *	  Unit tests of core/time_range.hpp: the smallest and largest IDs on one
 *	  side of a millisecond, checked against a scan of every ID near the
 *	  answer, on histories whose timestamps rise across a layout change and
 *	  on one whose never-issued IDs decode later than the next layout's start.
 */
#include <algorithm>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "core/time_range.hpp"

namespace snowflake {
namespace {

int64_t
Ms(const std::vector<LayoutSegment> &h, int64_t id)
{
	return UnixMsOfId(h.data(), static_cast<int>(h.size()), id);
}

/* Brute force over IDs [0, limit): the answers LowestIdFromMs must give. */
int64_t
ScanLowest(const std::vector<LayoutSegment> &h, int64_t limit, int64_t ms)
{
	for (int64_t id = 0; id < limit; id++)
		if (Ms(h, id) >= ms)
			return id;
	return -2;					/* not in the window */
}

int64_t
ScanHighest(const std::vector<LayoutSegment> &h, int64_t limit, int64_t ms)
{
	for (int64_t id = limit - 1; id >= 0; id--)
		if (Ms(h, id) <= ms)
			return id;
	return -1;
}

/*
 * Every millisecond from before the first epoch to past the window: the
 * lowest matches a scan whenever the scan finds one, and the highest does
 * whenever the answer lies below the window's top (above it the last
 * segment goes on to INT64_MAX).
 */
void
CheckAgainstScan(const std::vector<LayoutSegment> &h, int64_t limit)
{
	int			n = static_cast<int>(h.size());
	int64_t		top_ms = Ms(h, limit - 1);
	int64_t		latest_ms = top_ms;

	for (int64_t id = 0; id < limit; id++)
		latest_ms = std::max(latest_ms, Ms(h, id));

	for (int64_t ms = h[0].layout.epoch_ms - 3; ms <= latest_ms + 3; ms++)
	{
		int64_t		lowest = LowestIdFromMs(h.data(), n, ms);
		int64_t		scanned = ScanLowest(h, limit, ms);

		if (scanned != -2)
			EXPECT_EQ(lowest, scanned) << "lowest from ms " << ms;
		else
			EXPECT_TRUE(lowest == -1 || lowest >= limit) << "lowest from ms " << ms;

		int64_t		highest = HighestIdUntilMs(h.data(), n, ms);

		if (ms < top_ms)
			EXPECT_EQ(highest, ScanHighest(h, limit, ms)) << "highest until ms " << ms;
		else
			EXPECT_GE(highest, limit - 1) << "highest until ms " << ms;
	}
}

TEST(TimeRange, OneLayout)
{
	std::vector<LayoutSegment> h{{0, Layout{1000, 0, 2, 3}}};

	CheckAgainstScan(h, 4000);
	EXPECT_EQ(LowestIdFromMs(h.data(), 1, 1000), 0);
	EXPECT_EQ(LowestIdFromMs(h.data(), 1, 1001), 32);
	EXPECT_EQ(HighestIdUntilMs(h.data(), 1, 1000), 31);
	EXPECT_EQ(HighestIdUntilMs(h.data(), 1, 999), -1);
}

TEST(TimeRange, WiderTimestampAfterChange)
{
	/* Shift 5 then shift 3, with a later epoch: times keep rising. */
	std::vector<LayoutSegment> h{{0, Layout{1000, 0, 2, 3}},
								 {64 * 32, Layout{1000 + 60, 0, 0, 3}}};

	ASSERT_LE(Ms(h, 64 * 32 - 1), Ms(h, 64 * 32));
	CheckAgainstScan(h, 6000);
}

TEST(TimeRange, NarrowerTimestampLeavesLateGap)
{
	/*
	 * Shift 3 then shift 6: IDs just below the second segment decode far
	 * later than its start.  The lowest ID from a millisecond then lies in
	 * the gap, and the highest ID until a millisecond in the new segment.
	 */
	std::vector<LayoutSegment> h{{0, Layout{1000, 0, 0, 3}},
								 {64 * 40, Layout{1000, 0, 3, 3}}};

	ASSERT_GT(Ms(h, 64 * 40 - 1), Ms(h, 64 * 40));
	CheckAgainstScan(h, 8000);
}

TEST(TimeRange, FirstSegmentTakesIdsBelowItsFirstId)
{
	std::vector<LayoutSegment> h{{500, Layout{1000, 0, 1, 2}},
								 {2000, Layout{1000 + 300, 0, 0, 2}}};

	CheckAgainstScan(h, 5000);
	EXPECT_EQ(LowestIdFromMs(h.data(), 2, 0), 0);
}

TEST(TimeRange, EndsOfInt64)
{
	/* 31 timestamp bits: the last millisecond reaches INT64_MAX. */
	std::vector<LayoutSegment> h{{0, Layout{0, 10, 10, 12}}};
	int64_t		last_ms = h[0].layout.MaxTimestamp();

	EXPECT_EQ(HighestIdUntilMs(h.data(), 1, last_ms), INT64_MAX);
	EXPECT_EQ(HighestIdUntilMs(h.data(), 1, last_ms + 1000), INT64_MAX);
	EXPECT_EQ(LowestIdFromMs(h.data(), 1, last_ms), last_ms << 32);
	EXPECT_EQ(LowestIdFromMs(h.data(), 1, last_ms + 1), -1);
	EXPECT_EQ(HighestIdUntilMs(h.data(), 1, last_ms - 1), (last_ms << 32) - 1);
	EXPECT_EQ(HighestIdUntilMs(h.data(), 1, -1), -1);
	EXPECT_EQ(LowestIdFromMs(h.data(), 1, INT64_MIN / 4), 0);
}

}							/* namespace */
}							/* namespace snowflake */
