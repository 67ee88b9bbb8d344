/*
 * lease_rules_test.cpp
 *	  Unit tests of the worker-id lease rules (core/lease_rules.hpp): the
 *	  next holder's not_before, the choice of a free worker id, client
 *	  clocks, ttls and reported IDs.  Runs without a server.
 */
#include <cstdint>

#include <gtest/gtest.h>

#include "core/lease_rules.hpp"

namespace snowflake {
namespace {

constexpr int64_t kNow = 1800000000000;	/* a Unix ms */
constexpr int64_t kFloorMinus1 = kNow - 60000;
constexpr int64_t kWait = 10000;

LeaseHistory
NeverLeased()
{
	return LeaseHistory{};
}

LeaseHistory
Ended(int64_t not_before, int64_t not_after, int64_t last, bool released, int64_t free_since)
{
	LeaseHistory h{};

	h.ever_leased = true;
	h.released = released;
	h.not_before_ms = not_before;
	h.not_after_ms = not_after;
	h.last_timestamp_ms = last;
	h.free_since_ms = free_since;
	return h;
}

LeaseHistory
Held()
{
	LeaseHistory h = Ended(kNow - 1000, kNow + 1000, kNoTimestamp, false, kNow + 1000);

	h.held = true;
	return h;
}

TEST(NextNotBefore, AboveTheFloorThePreviousNotBeforeAndWhatTheHolderMayHaveIssued)
{
	const struct
	{
		const char *why;
		LeaseHistory history;
		int64_t		not_before;
	} rows[] = {
		{"never leased: the floor", NeverLeased(), kFloorMinus1},
		{"released: the last report",
		 Ended(kNow - 5000, kNow + 5000, kNow - 100, true, kNow), kNow - 100},
		/* Expired or disconnected: the holder may have issued up to not_after - 1. */
		{"unreleased: the whole window",
		 Ended(kNow - 5000, kNow + 5000, kNow - 100, false, kNow + 5000), kNow + 4999},
		{"the previous not_before",
		 Ended(kNow + 3000, kNow + 4000, kNoTimestamp, true, kNow), kNow + 3000},
		{"the floor", Ended(kNow - 90000, kNow - 80000, kNow - 85000, true, kNow - 80000),
		 kFloorMinus1},
	};

	for (const auto &row : rows)
		EXPECT_EQ(NextNotBefore(row.history, kFloorMinus1), row.not_before) << row.why;
}

TEST(ChooseWorker, NeverLeasedFirstThenLeastRecentlyFreed)
{
	LeaseHistory h[4] = {
		Ended(kNow - 9000, kNow - 8000, kNoTimestamp, true, kNow - 100),
		Ended(kNow - 9000, kNow - 8000, kNoTimestamp, true, kNow - 500),
		NeverLeased(),
		NeverLeased(),
	};
	LeaseChoice c = ChooseWorker(h, 4, kNow, kFloorMinus1, kWait);

	EXPECT_EQ(c.outcome, LeaseChoice::kChosen);
	EXPECT_EQ(c.index, 2u);
	h[2] = Held();
	h[3] = Held();
	c = ChooseWorker(h, 4, kNow, kFloorMinus1, kWait);
	EXPECT_EQ(c.outcome, LeaseChoice::kChosen);
	EXPECT_EQ(c.index, 1u);		/* freed longest ago */
	EXPECT_EQ(c.not_before_ms, kNow - 9000);
}

TEST(ChooseWorker, AllHeld)
{
	LeaseHistory h[2] = {Held(), Held()};

	EXPECT_EQ(ChooseWorker(h, 2, kNow, kFloorMinus1, kWait).outcome, LeaseChoice::kAllHeld);
}

TEST(ChooseWorker, ARevokedIdDoesNotBlockTheOthers)
{
	/* A revocation pushed id 0 12 hours ahead; id 1 was released normally. */
	int64_t		twelve_hours = 12 * 3600 * 1000LL;
	LeaseHistory h[2] = {
		Ended(kNow - 1000, kNow + twelve_hours, kNow + twelve_hours - 1, true, kNow - 5000),
		Ended(kNow - 1000, kNow + twelve_hours, kNow - 10, true, kNow - 1),
	};
	LeaseChoice c = ChooseWorker(h, 2, kNow, kFloorMinus1, kWait);

	EXPECT_EQ(c.outcome, LeaseChoice::kChosen);
	EXPECT_EQ(c.index, 1u);
	EXPECT_EQ(c.not_before_ms, kNow - 10);
}

TEST(ChooseWorker, RefusedOnlyWhenEveryFreeIdWaitsTooLong)
{
	LeaseHistory h[3] = {
		Ended(kNow, kNow + 50000, kNoTimestamp, false, kNow + 50000),
		Ended(kNow, kNow + 30000, kNoTimestamp, false, kNow + 30000),
		Held(),
	};
	LeaseChoice c = ChooseWorker(h, 3, kNow, kFloorMinus1, kWait);

	EXPECT_EQ(c.outcome, LeaseChoice::kAllWaitTooLong);
	EXPECT_EQ(c.not_before_ms, kNow + 29999);	/* the nearest */
	/* Within the wait it is granted, though its not_before lies ahead. */
	c = ChooseWorker(h, 3, kNow + 25000, kFloorMinus1, kWait);
	EXPECT_EQ(c.outcome, LeaseChoice::kChosen);
	EXPECT_EQ(c.index, 1u);
	EXPECT_EQ(c.not_before_ms, kNow + 29999);
}

TEST(ChooseWorker, ConsecutiveWindowsNeverOverlap)
{
	/* Grant, vanish, grant again: each window starts at or above the last end - 1. */
	LeaseHistory h[1] = {NeverLeased()};
	int64_t		now = kNow;

	for (int round = 0; round < 50; round++)
	{
		LeaseChoice c = ChooseWorker(h, 1, now, kFloorMinus1, kWait);

		ASSERT_EQ(c.outcome, LeaseChoice::kChosen);
		int64_t		not_after = WindowEnd(now, c.not_before_ms, kWait);

		if (h[0].ever_leased)
		{
			ASSERT_GE(c.not_before_ms, h[0].not_after_ms - 1);
		}
		h[0] = Ended(c.not_before_ms, not_after, kNoTimestamp, false, not_after);
		now = not_after;		/* the next request comes when the window ends */
	}
}

TEST(WindowEnd, FromTheLaterOfNowAndNotBefore)
{
	EXPECT_EQ(WindowEnd(kNow, kNow - 5, 1000), kNow + 1000);
	EXPECT_EQ(WindowEnd(kNow, kNow + 5, 1000), kNow + 1005);
}

TEST(CheckClientClock, ToleranceBothWaysAndThePreviousHolder)
{
	EXPECT_EQ(CheckClientClock(kNow, kNow, 1000, kNoTimestamp), ClientClock::kOk);
	EXPECT_EQ(CheckClientClock(kNow - 1000, kNow, 1000, kNoTimestamp), ClientClock::kOk);
	EXPECT_EQ(CheckClientClock(kNow - 1001, kNow, 1000, kNoTimestamp), ClientClock::kBehind);
	EXPECT_EQ(CheckClientClock(kNow + 1001, kNow, 1000, kNoTimestamp), ClientClock::kAhead);
	EXPECT_EQ(CheckClientClock(kNow, kNow, 1000, kNow + 1001), ClientClock::kBehindPrevious);
	EXPECT_EQ(CheckClientClock(kNow, kNow, 1000, kNow + 1000), ClientClock::kOk);
	EXPECT_EQ(CheckClientClock(INT64_MIN / 2, kNow, 1000, kNoTimestamp), ClientClock::kBehind);
	EXPECT_EQ(CheckClientClock(INT64_MAX / 2, kNow, 1000, kNoTimestamp), ClientClock::kAhead);
}

TEST(TtlMs, OneSecondToOneDayWithoutMonths)
{
	EXPECT_EQ(TtlMs(0, 0, 1000000), 1000);
	EXPECT_EQ(TtlMs(0, 1, 0), 86400000);
	EXPECT_EQ(TtlMs(0, 2, -86400000000LL), 86400000);	/* "2 days -24 hours" */
	EXPECT_EQ(TtlMs(0, 0, 999999), -1);
	EXPECT_EQ(TtlMs(0, 1, 1000), -1);	/* 1 day 1 ms */
	EXPECT_EQ(TtlMs(1, -30, 0), -1);	/* months have no fixed length */
	EXPECT_EQ(TtlMs(INT32_MAX, INT32_MAX, INT64_MAX), -1);	/* infinity, on 17+ */
	EXPECT_EQ(TtlMs(INT32_MIN, INT32_MIN, INT64_MIN), -1);
	EXPECT_EQ(TtlMs(0, INT32_MAX, 0), -1);
	EXPECT_EQ(TtlMs(0, INT32_MIN, INT64_MAX), -1);
	EXPECT_EQ(TtlMs(0, 0, -500), -1);
}

TEST(CheckReportedId, NodeWorkerAndWindow)
{
	const Layout layout{1735689600000, 3, 7, 12};
	int64_t		id = Compose(layout, IdParts{kNow - layout.epoch_ms, 5, 125, 7});
	int64_t		ts = 0;
	auto		check = [&](int64_t reported, uint32_t node, uint32_t worker, int64_t not_before,
							int64_t not_after) {
		return CheckReportedId(layout, reported, node, worker, not_before, not_after, &ts);
	};

	EXPECT_EQ(check(id, 5, 125, kNow - 1, kNow + 1), ReportedId::kOk);
	EXPECT_EQ(ts, kNow);
	EXPECT_EQ(check(id, 5, 124, kNow - 1, kNow + 1), ReportedId::kOtherWorker);
	EXPECT_EQ(check(id, 4, 125, kNow - 1, kNow + 1), ReportedId::kOtherWorker);
	/* Strictly inside the window. */
	EXPECT_EQ(check(id, 5, 125, kNow, kNow + 1), ReportedId::kOutsideWindow);
	EXPECT_EQ(check(id, 5, 125, kNow - 1, kNow), ReportedId::kOutsideWindow);
	EXPECT_EQ(check(-1, 5, 125, kNow - 1, kNow + 1), ReportedId::kNegative);
	EXPECT_EQ(check(INT64_MIN, 5, 125, kNow - 1, kNow + 1), ReportedId::kNegative);
}

}							/* namespace */
}							/* namespace snowflake */
