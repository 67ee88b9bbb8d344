/*
 * horizon_test.cpp
 *	  Unit tests of core/horizon.hpp: when a layout's timestamps run out,
 *	  and the once-a-day warning under a year before.
 */
#include <cstdint>

#include <gtest/gtest.h>

#include "core/horizon.hpp"

namespace snowflake {
namespace {

/* 2025-01-01 00:00:00 UTC, the default epoch. */
constexpr int64_t kEpoch2025Ms = INT64_C(1735689600000);

TEST(Horizon, DefaultLayoutEndsIn2094)
{
	/* 41 timestamp bits: 2^41 ms after 2025-01-01 is 2094-09-07 15:47:35.552. */
	const Layout layout{kEpoch2025Ms, 3, 7, 12};

	EXPECT_EQ(HorizonUnixMs(layout), kEpoch2025Ms + (INT64_C(1) << 41));
	EXPECT_EQ(HorizonUnixMs(layout), INT64_C(3934712855552));
	EXPECT_EQ(HorizonUnixMs(layout), layout.LastUnixMs() + 1);
}

TEST(Horizon, NarrowestLayoutLastsAboutTwentyFiveDays)
{
	/* 31 timestamp bits, the fewest the settings allow: 2^31 ms. */
	const Layout layout{kEpoch2025Ms, 15, 16, 1};

	ASSERT_EQ(layout.TimestampBits(), 31);
	EXPECT_EQ(MsUntilHorizon(layout, kEpoch2025Ms), INT64_C(2147483648));
}

TEST(Horizon, WidestLayoutDoesNotOverflow)
{
	/* 62 timestamp bits (one sequence bit): about 146 million years. */
	const Layout layout{kEpoch2025Ms, 0, 0, 1};

	ASSERT_EQ(layout.TimestampBits(), 62);
	EXPECT_EQ(HorizonUnixMs(layout), kEpoch2025Ms + (INT64_C(1) << 62));
	EXPECT_EQ(MsUntilHorizon(layout, kEpoch2025Ms), INT64_C(1) << 62);
	EXPECT_FALSE(HorizonWarningDue(layout, kEpoch2025Ms, kNeverWarnedDay));
}

TEST(Horizon, MsUntilHorizonCountsDownToZero)
{
	const Layout layout{kEpoch2025Ms, 10, 9, 10}; /* 34 bits */
	int64_t horizon = kEpoch2025Ms + (INT64_C(1) << 34);

	EXPECT_EQ(MsUntilHorizon(layout, kEpoch2025Ms), INT64_C(1) << 34);
	EXPECT_EQ(MsUntilHorizon(layout, horizon - 1), 1);
	EXPECT_EQ(MsUntilHorizon(layout, horizon), 0);
	EXPECT_EQ(MsUntilHorizon(layout, horizon + kMsPerDay), 0);
}

TEST(Horizon, UnixDayFloors)
{
	EXPECT_EQ(UnixDay(0), 0);
	EXPECT_EQ(UnixDay(kMsPerDay - 1), 0);
	EXPECT_EQ(UnixDay(kMsPerDay), 1);
	EXPECT_EQ(UnixDay(-1), -1);
	EXPECT_EQ(UnixDay(-kMsPerDay), -1);
	EXPECT_EQ(UnixDay(-kMsPerDay - 1), -2);
	/* 2025-01-01 is day 20089. */
	EXPECT_EQ(UnixDay(kEpoch2025Ms), 20089);
}

TEST(HorizonWarning, NotWhileAYearOrMoreIsLeft)
{
	const Layout layout{kEpoch2025Ms, 3, 7, 12};

	EXPECT_FALSE(HorizonWarningDue(layout, kEpoch2025Ms, kNeverWarnedDay));

	/* Exactly 365 days left: not yet; one millisecond later: due. */
	int64_t year_before = HorizonUnixMs(layout) - kHorizonWarningMs;

	EXPECT_FALSE(HorizonWarningDue(layout, year_before, kNeverWarnedDay));
	EXPECT_TRUE(HorizonWarningDue(layout, year_before + 1, kNeverWarnedDay));
}

TEST(HorizonWarning, OnceADay)
{
	/* 34 bits from 2025-01-01: about 199 days, so a warning from the start. */
	const Layout layout{kEpoch2025Ms, 10, 9, 10};
	int64_t noon = kEpoch2025Ms + 10 * kMsPerDay + kMsPerDay / 2;
	int64_t day = UnixDay(noon);

	EXPECT_TRUE(HorizonWarningDue(layout, noon, kNeverWarnedDay));
	/* Warned today: not again today, however often the worker looks. */
	EXPECT_FALSE(HorizonWarningDue(layout, noon, day));
	EXPECT_FALSE(HorizonWarningDue(layout, noon + kMsPerDay / 2 - 1, day));
	/* The next UTC day: again. */
	EXPECT_TRUE(HorizonWarningDue(layout, noon + kMsPerDay / 2, day));
	/* A clock stepped back into the day before: not again. */
	EXPECT_FALSE(HorizonWarningDue(layout, noon - kMsPerDay, day));
}

TEST(HorizonWarning, StillDueOnceTheHorizonHasPassed)
{
	const Layout layout{kEpoch2025Ms, 10, 9, 10};
	int64_t after = HorizonUnixMs(layout) + kMsPerDay;

	EXPECT_TRUE(HorizonWarningDue(layout, after, UnixDay(after) - 1));
}

TEST(ClampToLayout, KeepsTimesWithinTheLayoutAndLowersTheRest)
{
	/* 31 timestamp bits: the last millisecond is 2^31 - 1 past the epoch. */
	const Layout layout{kEpoch2025Ms, 3, 7, 22};
	const int64_t last = (INT64_C(1) << 31) - 1;

	ASSERT_EQ(layout.MaxTimestamp(), last);
	EXPECT_EQ(ClampTimestampToLayout(layout, 0), 0);
	EXPECT_EQ(ClampTimestampToLayout(layout, last - 1), last - 1);
	EXPECT_EQ(ClampTimestampToLayout(layout, last), last);
	EXPECT_EQ(ClampTimestampToLayout(layout, last + 1), last);
	/* reserve_ahead past a clock 1 s before the end. */
	EXPECT_EQ(ClampTimestampToLayout(layout, last - 1000 + 60000), last);

	EXPECT_EQ(ClampUnixMsToLayout(layout, kEpoch2025Ms), kEpoch2025Ms);
	EXPECT_EQ(ClampUnixMsToLayout(layout, kEpoch2025Ms + last), kEpoch2025Ms + last);
	EXPECT_EQ(ClampUnixMsToLayout(layout, kEpoch2025Ms + last + 1), layout.LastUnixMs());
	/* The reservation file's hint: the clock plus a day and a minute. */
	EXPECT_EQ(ClampUnixMsToLayout(layout, kEpoch2025Ms + last - 1000 + 86460000),
			  layout.LastUnixMs());
}

TEST(ClampToLayout, WidestLayoutDoesNotOverflow)
{
	const Layout layout{kEpoch2025Ms, 0, 0, 1};

	EXPECT_EQ(ClampTimestampToLayout(layout, INT64_C(1) << 40), INT64_C(1) << 40);
	EXPECT_EQ(ClampUnixMsToLayout(layout, kEpoch2025Ms + 86460000),
			  kEpoch2025Ms + 86460000);
}

} /* namespace */
} /* namespace snowflake */
