/*
 * core_test.cpp
 *	  Unit tests of the pure C++ core: bit packing, layout checks, epoch
 *	  parsing, and the generator under overflow and a clock behind its mark.
 *	  Runs without a server.
 */
#include <cstdint>
#include <set>

#include <gtest/gtest.h>

#include "../../src/core/epoch.hpp"
#include "../../src/core/generator.hpp"
#include "../../src/core/layout.hpp"

namespace snowflake {
namespace {

constexpr int64_t kEpoch2025 = 1735689600000;	/* 2025-01-01 00:00:00 UTC */
constexpr int64_t kUnreserved = INT64_MAX;		/* no reservation limit */

Layout
DefaultLayout()
{
	Layout layout;

	layout.epoch_ms = kEpoch2025;
	layout.node_bits = 3;
	layout.worker_bits = 7;
	layout.sequence_bits = 12;
	return layout;
}

Generator
StartedAt(const Layout &layout, int64_t floor_timestamp, int64_t max_drift = 1000,
		  uint32_t node = 5, uint32_t worker = 17)
{
	Generator g;

	g.Start(layout, node, worker, max_drift, MarkBefore(layout, floor_timestamp));
	return g;
}

TEST(Layout, DefaultWidths)
{
	Layout layout = DefaultLayout();

	EXPECT_EQ(layout.TimestampBits(), 41);
	EXPECT_EQ(layout.TimestampShift(), 22);
	EXPECT_EQ(layout.NodeShift(), 19);
	EXPECT_EQ(layout.WorkerShift(), 12);
	EXPECT_EQ(layout.MaxSequence(), 4095u);
	EXPECT_EQ(layout.MaxWorkerId(), 127u);
	EXPECT_EQ(layout.MaxNodeId(), 7u);
	/* 41 bits of milliseconds from 2025 last until 2094-09-07. */
	EXPECT_EQ(layout.LastUnixMs(), kEpoch2025 + (int64_t{1} << 41) - 1);
}

TEST(Layout, ComposeHandComputed)
{
	Layout layout = DefaultLayout();
	IdParts parts{1000, 5, 17, 42};

	/* 1000 << 22 | 5 << 19 | 17 << 12 | 42 */
	EXPECT_EQ(Compose(layout, parts), 4194304000 + 2621440 + 69632 + 42);
}

TEST(Layout, DecomposeInvertsCompose)
{
	Layout layout = DefaultLayout();
	IdParts parts{(int64_t{1} << 41) - 1, 7, 127, 4095};
	int64_t id = Compose(layout, parts);

	EXPECT_EQ(id, INT64_MAX);
	IdParts back = Decompose(layout, id);

	EXPECT_EQ(back.timestamp, parts.timestamp);
	EXPECT_EQ(back.node_id, 7u);
	EXPECT_EQ(back.worker_id, 127u);
	EXPECT_EQ(back.sequence, 4095u);
}

TEST(Layout, ZeroNodeAndWorkerBits)
{
	Layout layout = DefaultLayout();

	layout.node_bits = 0;
	layout.worker_bits = 0;
	IdParts back = Decompose(layout, Compose(layout, IdParts{77, 0, 0, 9}));

	EXPECT_EQ(back.timestamp, 77);
	EXPECT_EQ(back.sequence, 9u);
	EXPECT_EQ(Compose(layout, IdParts{77, 0, 0, 9}), (77 << 12) | 9);
}

TEST(Layout, WidthChecks)
{
	Layout layout = DefaultLayout();

	EXPECT_EQ(CheckWidths(layout), WidthProblem::kOk);
	layout.node_bits = 10;
	layout.worker_bits = 10;
	layout.sequence_bits = 12;		/* 32 bits left: 31 is the minimum */
	EXPECT_EQ(CheckWidths(layout), WidthProblem::kOk);
	layout.sequence_bits = 13;
	EXPECT_EQ(CheckWidths(layout), WidthProblem::kTimestampTooNarrow);
	layout.sequence_bits = 0;
	EXPECT_EQ(CheckWidths(layout), WidthProblem::kNoSequenceBits);
}

TEST(Layout, EpochChecks)
{
	Layout layout = DefaultLayout();

	EXPECT_EQ(CheckEpoch(layout, kEpoch2025), EpochProblem::kOk);
	EXPECT_EQ(CheckEpoch(layout, kEpoch2025 - 1), EpochProblem::kInFuture);
	EXPECT_EQ(CheckEpoch(layout, layout.LastUnixMs()), EpochProblem::kOk);
	EXPECT_EQ(CheckEpoch(layout, layout.LastUnixMs() + 1), EpochProblem::kExhausted);
}

TEST(Layout, SuccessorBounds)
{
	Layout old_layout = DefaultLayout();
	Layout wider = DefaultLayout();
	int64_t now = kEpoch2025 + 50000000000;		/* about 1.6 years in */

	wider.sequence_bits = 13;
	/* One more low bit doubles every ID: the new layout is provably above. */
	EXPECT_GT(SmallestIdFrom(wider, now), LargestIdUntil(old_layout, now + 60000));
	/* And the reverse is provably not. */
	EXPECT_LT(SmallestIdFrom(old_layout, now), LargestIdUntil(wider, now + 60000));
	EXPECT_TRUE(IsProvableSuccessor(old_layout, now + 60000, wider, now));
	EXPECT_FALSE(IsProvableSuccessor(wider, now + 60000, old_layout, now));
	EXPECT_FALSE(IsProvableSuccessor(old_layout, now + 60000, old_layout, now));

	/* An earlier epoch lifts every ID; a later one lowers them. */
	Layout earlier = DefaultLayout();

	earlier.epoch_ms -= 86400000;
	EXPECT_TRUE(IsProvableSuccessor(old_layout, now + 60000, earlier, now));
	EXPECT_FALSE(IsProvableSuccessor(earlier, now + 60000, old_layout, now));

	/* Outside the layout's time range there is no bound. */
	EXPECT_EQ(SmallestIdFrom(old_layout, kEpoch2025 - 1), -1);
	EXPECT_EQ(LargestIdUntil(old_layout, old_layout.LastUnixMs()), INT64_MAX);
}

TEST(Epoch, AcceptedForms)
{
	int64_t ms = 0;

	ASSERT_TRUE(ParseEpoch("2025-01-01", &ms));
	EXPECT_EQ(ms, kEpoch2025);
	ASSERT_TRUE(ParseEpoch("2025-01-01 00:00:00+00", &ms));
	EXPECT_EQ(ms, kEpoch2025);
	ASSERT_TRUE(ParseEpoch("2025-01-01T00:00:01.250Z", &ms));
	EXPECT_EQ(ms, kEpoch2025 + 1250);
	ASSERT_TRUE(ParseEpoch("1970-01-01", &ms));
	EXPECT_EQ(ms, 0);
	ASSERT_TRUE(ParseEpoch("2024-02-29 12:30", &ms));
	EXPECT_EQ(ms, 1709209800000);
	ASSERT_TRUE(ParseEpoch("2010-11-04 01:42:54.657+00:00", &ms));
	EXPECT_EQ(ms, 1288834974657);	/* Twitter's epoch */
}

TEST(Epoch, RejectedForms)
{
	int64_t ms = 0;

	for (const char *bad : {"", "yesterday", "2025-1-01", "2025-02-29", "2025-13-01",
							"2025-01-01 24:00", "2025-01-01 10:61", "2025-01-01+01",
							"2025-01-01 00:00:00 junk", "2025-01-01 00:00:00.5"})
		EXPECT_FALSE(ParseEpoch(bad, &ms)) << bad;
	EXPECT_FALSE(ParseEpoch(nullptr, &ms));
}

TEST(Generator, FirstIdAtFloorThenCountsUp)
{
	Layout layout = DefaultLayout();
	Generator g = StartedAt(layout, 1000);
	int64_t id = 0;

	/* The clock is behind the floor: IDs start at the floor, sequence 0. */
	ASSERT_EQ(g.Next(500, kUnreserved, &id), Outcome::kIssued);
	EXPECT_EQ(id, Compose(layout, IdParts{1000, 5, 17, 0}));
	ASSERT_EQ(g.Next(500, kUnreserved, &id), Outcome::kIssued);
	EXPECT_EQ(id, Compose(layout, IdParts{1000, 5, 17, 1}));
}

TEST(Generator, NewMillisecondRestartsSequence)
{
	Layout layout = DefaultLayout();
	Generator g = StartedAt(layout, 1000);
	int64_t id = 0;

	ASSERT_EQ(g.Next(1000, kUnreserved, &id), Outcome::kIssued);
	ASSERT_EQ(g.Next(1000, kUnreserved, &id), Outcome::kIssued);
	ASSERT_EQ(g.Next(1003, kUnreserved, &id), Outcome::kIssued);
	EXPECT_EQ(id, Compose(layout, IdParts{1003, 5, 17, 0}));
}

TEST(Generator, OverflowBorrowsUpToMaxDriftThenWaits)
{
	Layout layout = DefaultLayout();
	Generator g = StartedAt(layout, 1000, /* max_drift */ 3);
	int64_t id = 0;
	int64_t previous = -1;

	/* At a frozen clock, 4 ms of IDs fit: now and 3 borrowed ms. */
	for (int i = 0; i < 4 * 4096; i++)
	{
		ASSERT_EQ(g.Next(1000, kUnreserved, &id), Outcome::kIssued) << i;
		ASSERT_GT(id, previous);
		previous = id;
	}
	EXPECT_EQ(Decompose(layout, id).timestamp, 1003);
	EXPECT_EQ(Decompose(layout, id).sequence, 4095u);

	/* The next would be 4 ms ahead: wait until the clock reads 1001. */
	ASSERT_EQ(g.Next(1000, kUnreserved, &id), Outcome::kWait);
	EXPECT_EQ(id, 1001);
	/* Waiting changed nothing; at 1001 the ID is (1004, 0). */
	ASSERT_EQ(g.Next(1001, kUnreserved, &id), Outcome::kIssued);
	EXPECT_EQ(id, Compose(layout, IdParts{1004, 5, 17, 0}));
	EXPECT_GT(id, previous);
}

TEST(Generator, ZeroDriftWaitsForEachMillisecond)
{
	Layout layout = DefaultLayout();

	layout.sequence_bits = 1;
	Generator g = StartedAt(layout, 10, /* max_drift */ 0);
	int64_t id = 0;

	ASSERT_EQ(g.Next(10, kUnreserved, &id), Outcome::kIssued);
	ASSERT_EQ(g.Next(10, kUnreserved, &id), Outcome::kIssued);
	ASSERT_EQ(g.Next(10, kUnreserved, &id), Outcome::kWait);
	EXPECT_EQ(id, 11);
}

TEST(Generator, ClockBehindMarkNeverRepeatsOrDecreases)
{
	Layout layout = DefaultLayout();
	Generator g = StartedAt(layout, 5000, /* max_drift */ 1000);
	std::set<int64_t> seen;
	int64_t id = 0;
	int64_t previous = -1;

	/* Run at 5000..5009, then the clock steps back 500 ms and crawls on. */
	for (int64_t now : {5000, 5003, 5009, 4509, 4509, 4510, 4700, 5009, 5010})
		for (int i = 0; i < 100; i++)
		{
			ASSERT_EQ(g.Next(now, kUnreserved, &id), Outcome::kIssued);
			ASSERT_GT(id, previous);
			ASSERT_TRUE(seen.insert(id).second);
			previous = id;
		}
	/* While behind, IDs continued in the last millisecond issued. */
	EXPECT_EQ(Decompose(layout, id).timestamp, 5010);
}

TEST(Generator, ClockFarBehindWaitsInsteadOfRunningAhead)
{
	Layout layout = DefaultLayout();
	Generator g = StartedAt(layout, 5000, /* max_drift */ 1000);
	int64_t id = 0;

	ASSERT_EQ(g.Next(5000, kUnreserved, &id), Outcome::kIssued);
	/* One hour back: even the same millisecond would be 1 h ahead. */
	ASSERT_EQ(g.Next(5000 - 3600000, kUnreserved, &id), Outcome::kWait);
	EXPECT_EQ(id, 4000);
}

TEST(Generator, NewHolderContinuesAfterPreviousMark)
{
	Layout layout = DefaultLayout();
	Generator first = StartedAt(layout, 1000);
	int64_t id = 0;

	for (int i = 0; i < 10; i++)
		ASSERT_EQ(first.Next(1000, kUnreserved, &id), Outcome::kIssued);

	/* Same millisecond, next holder of the same worker id. */
	Generator second;

	second.Start(layout, 5, 17, 1000, first.mark());
	int64_t next = 0;

	ASSERT_EQ(second.Next(1000, kUnreserved, &next), Outcome::kIssued);
	EXPECT_EQ(next, id + 1);
}

TEST(Generator, NeverIssuesBeyondTheReservation)
{
	Layout layout = DefaultLayout();
	Generator g = StartedAt(layout, 1000);
	int64_t id = 0;

	/* Reserved up to 1000: the whole millisecond may be issued. */
	for (int i = 0; i < 4096; i++)
		ASSERT_EQ(g.Next(1000, 1000, &id), Outcome::kIssued) << i;
	/* The next one needs 1001 reserved first; nothing changes meanwhile. */
	ASSERT_EQ(g.Next(1000, 1000, &id), Outcome::kReserve);
	EXPECT_EQ(id, 1001);
	ASSERT_EQ(g.Next(1000, 1000, &id), Outcome::kReserve);
	/* Once reserved, it continues exactly where it stopped. */
	ASSERT_EQ(g.Next(1000, 1001, &id), Outcome::kIssued);
	EXPECT_EQ(id, Compose(layout, IdParts{1001, 5, 17, 0}));
}

TEST(Generator, ClockAheadOfReservationAsksForIt)
{
	Layout layout = DefaultLayout();
	Generator g = StartedAt(layout, 1000);
	int64_t id = 0;

	/* Idle for a while: the clock has passed the reservation. */
	ASSERT_EQ(g.Next(9000, 5000, &id), Outcome::kReserve);
	EXPECT_EQ(id, 9000);
}

TEST(Generator, DriftBoundComesBeforeTheReservation)
{
	Layout layout = DefaultLayout();
	Generator g = StartedAt(layout, 5000, /* max_drift */ 100);
	int64_t id = 0;

	/* Clock far behind the floor: waiting, not reserving, is the answer. */
	ASSERT_EQ(g.Next(1000, 0, &id), Outcome::kWait);
	EXPECT_EQ(id, 4900);
}

TEST(Generator, ExhaustedAtEndOfLayout)
{
	Layout layout = DefaultLayout();

	layout.node_bits = 10;
	layout.worker_bits = 10;
	layout.sequence_bits = 12;		/* 31 timestamp bits */
	int64_t last = layout.MaxTimestamp();
	Generator g;
	int64_t id = 0;

	g.Start(layout, 0, 0, 1000, Mark{last, layout.MaxSequence()});
	EXPECT_EQ(g.Next(last, kUnreserved, &id), Outcome::kExhausted);
}

}							/* namespace */
}							/* namespace snowflake */
