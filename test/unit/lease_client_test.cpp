/*
 * lease_client_test.cpp
 *	  Unit tests of the pure part of the C++ lease client
 *	  (clients/cpp/snowflake_lease.hpp), on a fake clock.  Needs neither a
 *	  server nor libpq.
 */
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "snowflake_lease.hpp"

namespace snowflake_lease {
namespace {

constexpr int64_t kEpoch2025 = 1735689600000; /* 2025-01-01 00:00:00 UTC */
constexpr int64_t kNow = 1767225600000;       /* 2026-01-01 00:00:00 UTC */
constexpr int64_t kFar = INT64_MAX;           /* a window without end */

Layout
DefaultLayout(int sequence_bits = 12)
{
	return Layout{kEpoch2025, 3, 7, sequence_bits};
}

Grant
MakeGrant(int64_t not_before, int64_t not_after, int sequence_bits = 12)
{
	Grant grant;

	grant.worker_id = 100;
	grant.node_id = 5;
	grant.token = 42;
	grant.not_before_ms = not_before;
	grant.not_after_ms = not_after;
	grant.renew_interval_ms = 10000;
	grant.layout = DefaultLayout(sequence_bits);
	return grant;
}

/* A clock that moves only when told to, or when someone sleeps on it. */
class FakeClock : public Clock
{
public:
	explicit FakeClock(int64_t now) : now_(now) {}

	int64_t NowMs() override { return now_.load(); }
	void SleepMs(int64_t ms) override
	{
		sleeps_++;
		now_ += ms;
	}
	void Set(int64_t now) { now_.store(now); }
	int64_t sleeps() const { return sleeps_.load(); }

private:
	std::atomic<int64_t> now_;
	std::atomic<int64_t> sleeps_{0};
};

/* Unix ms of an ID under the default layout. */
int64_t
UnixMs(int64_t id, int sequence_bits = 12)
{
	return UnixMsOf(DefaultLayout(sequence_bits), id);
}

/* The ID of node 5, worker 100 at Unix ms "unix_ms" under the default layout. */
int64_t
IdAt(int64_t unix_ms, uint32_t sequence, int sequence_bits = 12)
{
	return Compose(DefaultLayout(sequence_bits),
				   IdParts{unix_ms - kEpoch2025, 5, 100, sequence});
}

TEST(Layout, ComposeFollowsTheFormula)
{
	Layout layout = DefaultLayout();
	IdParts parts{kNow - kEpoch2025, 5, 100, 4000};
	int64_t expected = (parts.timestamp << (3 + 7 + 12)) | (int64_t{5} << (7 + 12)) |
		(int64_t{100} << 12) | 4000;

	EXPECT_EQ(layout.TimestampBits(), 41);
	EXPECT_EQ(Compose(layout, parts), expected);

	IdParts back = Decompose(layout, expected);

	EXPECT_EQ(back.timestamp, parts.timestamp);
	EXPECT_EQ(back.node_id, 5u);
	EXPECT_EQ(back.worker_id, 100u);
	EXPECT_EQ(back.sequence, 4000u);
	EXPECT_EQ(UnixMsOf(layout, expected), kNow);
}

TEST(Layout, LargestIdKeepsTheSignBitClear)
{
	Layout layout = DefaultLayout();
	IdParts parts{layout.MaxTimestamp(), layout.MaxNodeId(), layout.MaxWorkerId(),
				  layout.MaxSequence()};

	EXPECT_EQ(Compose(layout, parts), INT64_MAX);
}

TEST(Layout, ValidRefusesBadWidths)
{
	std::string why;

	EXPECT_TRUE(DefaultLayout().Valid(&why));
	EXPECT_FALSE(DefaultLayout(0).Valid(&why));
	EXPECT_FALSE((Layout{kEpoch2025, -1, 7, 12}).Valid(&why));
	EXPECT_FALSE((Layout{kEpoch2025, 31, 31, 12}).Valid(&why));
	EXPECT_EQ(why, "no bits left for the timestamp");
}

TEST(Grant, ValidGrantChecksIdsAndWindow)
{
	std::string why;
	Grant grant = MakeGrant(kNow, kNow + 30000);

	EXPECT_TRUE(ValidGrant(grant, &why));

	grant.worker_id = 128; /* 7 worker bits */
	EXPECT_FALSE(ValidGrant(grant, &why));
	grant = MakeGrant(kNow, kNow + 30000);
	grant.node_id = 8; /* 3 node bits */
	EXPECT_FALSE(ValidGrant(grant, &why));
	grant = MakeGrant(kNow, kNow);
	EXPECT_FALSE(ValidGrant(grant, &why));
	grant = MakeGrant(kEpoch2025 - 2, kNow);
	EXPECT_FALSE(ValidGrant(grant, &why));
	grant = MakeGrant(kNow, kNow + 30000);
	grant.renew_interval_ms = 0;
	EXPECT_FALSE(ValidGrant(grant, nullptr));
}

TEST(Format, UnixMsAsUtcTimestamptz)
{
	EXPECT_EQ(FormatUnixMs(0), "1970-01-01 00:00:00.000+00");
	EXPECT_EQ(FormatUnixMs(kNow + 45296789), "2026-01-01 12:34:56.789+00");
	EXPECT_EQ(FormatUnixMs(-1), "1969-12-31 23:59:59.999+00");
}

TEST(Sequencer, WaitsUntilTheClockPassesNotBefore)
{
	Sequencer seq(DefaultLayout(), 5, 100, kNow);
	int64_t out;

	EXPECT_EQ(seq.Step(kNow - 10, kFar, &out), Status::kWaitClock);
	EXPECT_EQ(out, kNow + 1);
	EXPECT_EQ(seq.Step(kNow, kFar, &out), Status::kWaitClock);
	EXPECT_EQ(out, kNow + 1);
	EXPECT_FALSE(seq.HasIssued());

	/* Not even max_drift lets the first ID run ahead of the clock. */
	Sequencer drifting(DefaultLayout(), 5, 100, kNow, 1000);

	EXPECT_EQ(drifting.Step(kNow, kFar, &out), Status::kWaitClock);

	ASSERT_EQ(seq.Step(kNow + 1, kFar, &out), Status::kIssued);
	EXPECT_EQ(out, IdAt(kNow + 1, 0));
	EXPECT_TRUE(seq.HasIssued());
	EXPECT_EQ(seq.LastId(), out);
}

TEST(Sequencer, SequenceCountsWithinAMillisecondAndRestarts)
{
	Sequencer seq(DefaultLayout(), 5, 100, kNow);
	int64_t out;

	for (uint32_t i = 0; i < 10; i++)
	{
		ASSERT_EQ(seq.Step(kNow + 5, kFar, &out), Status::kIssued);
		EXPECT_EQ(out, IdAt(kNow + 5, i));
	}
	ASSERT_EQ(seq.Step(kNow + 6, kFar, &out), Status::kIssued);
	EXPECT_EQ(out, IdAt(kNow + 6, 0));
}

TEST(Sequencer, NeverIssuesAtOrPastNotAfter)
{
	const int64_t not_after = kNow + 100;
	Sequencer seq(DefaultLayout(2), 5, 100, kNow);
	int64_t out;

	/* The clock at not_after: nothing, the window must move first. */
	EXPECT_EQ(seq.Step(not_after, not_after, &out), Status::kWaitRenewal);
	EXPECT_EQ(out, not_after);
	EXPECT_EQ(seq.Step(not_after + 500, not_after, &out), Status::kWaitRenewal);

	/* The last millisecond of the window, to its last sequence number. */
	for (int i = 0; i < 4; i++)
	{
		ASSERT_EQ(seq.Step(not_after - 1, not_after, &out), Status::kIssued);
		EXPECT_EQ(UnixMs(out, 2), not_after - 1);
	}
	/* Its sequence is used up, and the next ms would be not_after. */
	EXPECT_EQ(seq.Step(not_after, not_after, &out), Status::kWaitRenewal);
	EXPECT_EQ(out, not_after);
	/* Even with the clock stepped back, nothing past the window. */
	EXPECT_EQ(seq.Step(not_after - 50, not_after, &out), Status::kWaitClock);
}

TEST(Sequencer, RenewalMovesTheWindow)
{
	int64_t not_after = kNow + 10;
	Sequencer seq(DefaultLayout(), 5, 100, kNow);
	int64_t out;
	int64_t last;

	ASSERT_EQ(seq.Step(kNow + 9, not_after, &out), Status::kIssued);
	last = out;
	EXPECT_EQ(seq.Step(kNow + 10, not_after, &out), Status::kWaitRenewal);
	not_after = kNow + 20;
	ASSERT_EQ(seq.Step(kNow + 10, not_after, &out), Status::kIssued);
	EXPECT_EQ(UnixMs(out), kNow + 10);
	EXPECT_GT(out, last);
}

TEST(Sequencer, ClockBehindContinuesOnTheLastTimestamp)
{
	Sequencer seq(DefaultLayout(), 5, 100, kNow);
	int64_t first;
	int64_t out;

	ASSERT_EQ(seq.Step(kNow + 1000, kFar, &first), Status::kIssued);
	EXPECT_EQ(first, IdAt(kNow + 1000, 0));
	/* The clock steps back 500 ms: same millisecond, next sequence. */
	ASSERT_EQ(seq.Step(kNow + 500, kFar, &out), Status::kIssued);
	EXPECT_EQ(out, IdAt(kNow + 1000, 1));
	/* Even behind not_before, once an ID has been issued. */
	ASSERT_EQ(seq.Step(kNow - 100, kFar, &out), Status::kIssued);
	EXPECT_EQ(out, IdAt(kNow + 1000, 2));
}

TEST(Sequencer, OverflowWaitsForTheClockWithoutDrift)
{
	Sequencer seq(DefaultLayout(2), 5, 100, kNow);
	int64_t out;

	for (int i = 0; i < 4; i++)
		ASSERT_EQ(seq.Step(kNow + 1, kFar, &out), Status::kIssued);
	EXPECT_EQ(seq.Step(kNow + 1, kFar, &out), Status::kWaitClock);
	EXPECT_EQ(out, kNow + 2);
	/* A clock stepped back waits for the clock to pass the last ID. */
	EXPECT_EQ(seq.Step(kNow - 100, kFar, &out), Status::kWaitClock);
	EXPECT_EQ(out, kNow + 2);
	ASSERT_EQ(seq.Step(kNow + 2, kFar, &out), Status::kIssued);
	EXPECT_EQ(out, IdAt(kNow + 2, 0, 2));
}

TEST(Sequencer, OverflowBorrowsWithinMaxDrift)
{
	Sequencer seq(DefaultLayout(2), 5, 100, kNow, 2);
	int64_t out;

	/* At a stopped clock: its own ms, then two borrowed ms, 4 IDs each. */
	for (uint32_t i = 0; i < 12; i++)
	{
		ASSERT_EQ(seq.Step(kNow + 1, kFar, &out), Status::kIssued) << i;
		EXPECT_EQ(out, IdAt(kNow + 1 + i / 4, i % 4, 2));
	}
	/* A third ms would run 3 ms ahead of the clock. */
	EXPECT_EQ(seq.Step(kNow + 1, kFar, &out), Status::kWaitClock);
	EXPECT_EQ(out, kNow + 2);
	ASSERT_EQ(seq.Step(kNow + 2, kFar, &out), Status::kIssued);
	EXPECT_EQ(out, IdAt(kNow + 4, 0, 2));
}

TEST(Sequencer, ExhaustedLayout)
{
	Layout layout = DefaultLayout();

	layout.node_bits = 15;
	layout.worker_bits = 15;
	layout.sequence_bits = 2; /* 31 timestamp bits: about 24.8 days */

	Sequencer seq(layout, 5, 100, kEpoch2025);
	int64_t out;

	ASSERT_EQ(seq.Step(kEpoch2025 + layout.MaxTimestamp(), kFar, &out), Status::kIssued);
	EXPECT_EQ(seq.Step(kEpoch2025 + layout.MaxTimestamp() + 1, kFar, &out),
			  Status::kExhausted);
}

/* A clock that jumps about: IDs still increase and stay in the window. */
TEST(Sequencer, RandomClockStaysMonotonicAndInTheWindow)
{
	const int64_t not_before = kNow;
	int64_t not_after = kNow + 200;
	Sequencer seq(DefaultLayout(3), 5, 100, not_before, 1);
	std::mt19937_64 rng(12345);
	std::set<int64_t> seen;
	int64_t prev = -1;
	int64_t clock = kNow - 50;

	for (int i = 0; i < 200000; i++)
	{
		int64_t out;

		clock += static_cast<int64_t>(rng() % 7) - 2; /* mostly forward */
		if (rng() % 1000 == 0)
			clock -= 100; /* a step back */
		if (rng() % 500 == 0)
			not_after = std::max(not_after, clock + 200); /* a renewal */

		Status status = seq.Step(clock, not_after, &out);

		if (status != Status::kIssued)
		{
			ASSERT_TRUE(status == Status::kWaitClock || status == Status::kWaitRenewal);
			continue;
		}

		int64_t t = UnixMs(out, 3);
		IdParts parts = Decompose(DefaultLayout(3), out);

		ASSERT_GT(out, prev);
		ASSERT_GT(t, not_before);
		ASSERT_LT(t, not_after);
		ASSERT_LE(t, std::max(clock + 1, UnixMs(prev, 3)));
		ASSERT_EQ(parts.node_id, 5u);
		ASSERT_EQ(parts.worker_id, 100u);
		ASSERT_TRUE(seen.insert(out).second);
		prev = out;
	}
	EXPECT_GT(seen.size(), 1000u);
}

TEST(Generator, SleepsUntilTheClockPassesNotBefore)
{
	FakeClock clock(kNow - 30);
	Generator gen(MakeGrant(kNow, kNow + 30000), clock);
	int64_t id;

	EXPECT_FALSE(gen.LastId().has_value());
	ASSERT_EQ(gen.Next(&id), Status::kIssued);
	EXPECT_EQ(UnixMs(id), kNow + 1);
	EXPECT_GE(clock.NowMs(), kNow + 1);
	EXPECT_GT(clock.sleeps(), 0);
	ASSERT_TRUE(gen.LastId().has_value());
	EXPECT_EQ(*gen.LastId(), id);
}

TEST(Generator, TryNextNeverWaits)
{
	FakeClock clock(kNow);
	Generator gen(MakeGrant(kNow, kNow + 30000), clock);
	int64_t value;

	EXPECT_EQ(gen.TryNext(&value), Status::kWaitClock);
	EXPECT_EQ(value, kNow + 1);
	EXPECT_EQ(clock.sleeps(), 0);
	clock.Set(kNow + 1);
	EXPECT_EQ(gen.TryNext(&value), Status::kIssued);
	clock.Set(kNow + 30000);
	EXPECT_EQ(gen.TryNext(&value), Status::kWaitRenewal);
}

TEST(Generator, OverflowWaitsForTheFakeClock)
{
	FakeClock clock(kNow + 1);
	Generator gen(MakeGrant(kNow, kNow + 30000, 2), clock);
	int64_t prev = -1;

	for (int i = 0; i < 40; i++)
	{
		int64_t id;

		ASSERT_EQ(gen.Next(&id), Status::kIssued);
		EXPECT_GT(id, prev);
		/* Never ahead of the clock: max_drift is 0. */
		EXPECT_LE(UnixMs(id, 2), clock.NowMs());
		prev = id;
	}
	EXPECT_EQ(clock.NowMs(), kNow + 10);
}

TEST(Generator, TimesOutWhileTheWindowIsNotRenewed)
{
	FakeClock clock(kNow + 100);
	Generator gen(MakeGrant(kNow, kNow + 100), clock);
	int64_t id;

	EXPECT_EQ(gen.Next(&id, 30), Status::kTimeout);
	EXPECT_FALSE(gen.LastId().has_value());
	EXPECT_EQ(gen.NotAfterMs(), kNow + 100);
}

TEST(Generator, ARenewalWakesABlockedNext)
{
	FakeClock clock(kNow + 100);
	Generator gen(MakeGrant(kNow, kNow + 100), clock);
	std::atomic<bool> done{false};
	Status status = Status::kTimeout;
	int64_t id = -1;

	std::thread worker([&] {
		status = gen.Next(&id, 10000);
		done = true;
	});

	std::this_thread::sleep_for(std::chrono::milliseconds(30));
	EXPECT_FALSE(done.load());
	gen.ExtendWindow(kNow + 200);
	worker.join();
	ASSERT_EQ(status, Status::kIssued);
	EXPECT_EQ(UnixMs(id), kNow + 100);
	EXPECT_EQ(gen.NotAfterMs(), kNow + 200);
}

TEST(Generator, ALostLeaseStopsAtOnceAndForGood)
{
	FakeClock clock(kNow + 100);
	Generator gen(MakeGrant(kNow, kNow + 100), clock);
	Status status = Status::kIssued;
	int64_t id;

	/* A Next() blocked on the window returns when the lease is lost. */
	std::thread worker([&] { status = gen.Next(&id, 10000); });

	std::this_thread::sleep_for(std::chrono::milliseconds(20));
	gen.MarkLost("SQLSTATE 55000: lease 42 is not held");
	worker.join();
	EXPECT_EQ(status, Status::kLost);
	EXPECT_TRUE(gen.Lost());
	EXPECT_EQ(gen.LostReason(), "SQLSTATE 55000: lease 42 is not held");

	/* A renewal afterwards changes nothing; the first reason stays. */
	gen.ExtendWindow(kNow + 100000);
	gen.MarkLost("another reason");
	EXPECT_EQ(gen.Next(&id), Status::kLost);
	EXPECT_EQ(gen.TryNext(&id), Status::kLost);
	EXPECT_EQ(gen.LostReason(), "SQLSTATE 55000: lease 42 is not held");
}

TEST(Generator, CloseStopsAndKeepsTheLastId)
{
	FakeClock clock(kNow + 1);
	Generator gen(MakeGrant(kNow, kNow + 30000), clock);
	int64_t id;
	int64_t last = -1;

	for (int i = 0; i < 5; i++)
	{
		ASSERT_EQ(gen.Next(&id), Status::kIssued);
		last = id;
	}
	gen.Close();
	EXPECT_EQ(gen.Next(&id), Status::kClosed);
	ASSERT_TRUE(gen.LastId().has_value());
	EXPECT_EQ(*gen.LastId(), last);
}

TEST(Generator, ThreadsGetUniqueIncreasingIds)
{
	constexpr int kThreads = 4;
	constexpr int kPerThread = 5000;
	FakeClock clock(kNow + 1);
	Generator gen(MakeGrant(kNow, kFar, 4), clock);
	std::vector<std::vector<int64_t>> ids(kThreads);
	std::vector<std::thread> threads;

	for (int t = 0; t < kThreads; t++)
		threads.emplace_back([&, t] {
			for (int i = 0; i < kPerThread; i++)
			{
				int64_t id;

				if (gen.Next(&id) != Status::kIssued)
					return;
				ids[t].push_back(id);
			}
		});
	for (std::thread &thread : threads)
		thread.join();

	std::set<int64_t> all;

	for (const std::vector<int64_t> &mine : ids)
	{
		ASSERT_EQ(mine.size(), static_cast<size_t>(kPerThread));
		EXPECT_TRUE(std::is_sorted(mine.begin(), mine.end()));
		EXPECT_EQ(std::adjacent_find(mine.begin(), mine.end()), mine.end());
		all.insert(mine.begin(), mine.end());
	}
	EXPECT_EQ(all.size(), static_cast<size_t>(kThreads * kPerThread));
	EXPECT_EQ(*gen.LastId(), *all.rbegin());
}

TEST(Generator, AClockSteppedBackNeverRepeatsAnId)
{
	FakeClock clock(kNow + 1000);
	Generator gen(MakeGrant(kNow, kNow + 30000, 3), clock);
	int64_t prev = -1;
	int64_t id;

	for (int i = 0; i < 5; i++)
	{
		ASSERT_EQ(gen.Next(&id), Status::kIssued);
		prev = id;
	}
	clock.Set(kNow + 10); /* 990 ms back */
	for (int i = 0; i < 20; i++)
	{
		ASSERT_EQ(gen.Next(&id), Status::kIssued);
		EXPECT_GT(id, prev);
		EXPECT_GE(UnixMs(id, 3), kNow + 1000);
		prev = id;
	}
	/* The sequence of kNow + 1000 ran out: it waited for the clock. */
	EXPECT_GE(clock.NowMs(), kNow + 1000);
}

TEST(SystemClock, OffsetShiftsTheClock)
{
	SystemClock plain;
	SystemClock ahead(5000);
	SystemClock behind(-5000);
	int64_t a = plain.NowMs();
	int64_t b = ahead.NowMs();
	int64_t c = behind.NowMs();

	EXPECT_NEAR(static_cast<double>(b - a), 5000.0, 100.0);
	EXPECT_NEAR(static_cast<double>(a - c), 5000.0, 100.0);
	EXPECT_GT(a, kEpoch2025);
}

TEST(Holder, DefaultHolderNamesHostPidAndApplication)
{
	std::string holder = DefaultHolder("billing");
	std::string pid = ":" + std::to_string(static_cast<long long>(getpid())) + ":";

	EXPECT_NE(holder.find(pid), std::string::npos);
	EXPECT_EQ(holder.substr(holder.size() - 8), ":billing");
}

TEST(FailedCall, NotHeldOrALostConnectionOfAConnectionScopedLeaseLosesIt)
{
	const struct
	{
		const char *sqlstate;
		bool connection_scoped;
		bool connected;
		bool loses;
	} cases[] = {
		{"55000", false, true, true},
		{"55000", true, true, true},
		{"55000", false, false, true},
		{"08006", true, false, true},
		{"", true, false, true},
		/* A termination during the wait for synchronous standbys. */
		{"57P01", true, false, true},
		{"08006", false, false, false},
		{"57P01", false, false, false},
		/* "canceling statement due to user request", also in the server's wait
		 * for the synchronous standbys: the change is not known to be there. */
		{"57014", false, true, false},
		{"57014", true, true, false},
		/* Any other error is transient. */
		{"22023", true, true, false}, /* a refused client clock */
		{"42501", false, true, false}, /* another role's lease */
		{"55P03", false, true, false},
		{"", false, true, false},
		{"5500", false, true, false},
		{"550000", false, true, false},
	};

	for (const auto &c : cases)
		EXPECT_EQ(FailureLosesLease(c.sqlstate, c.connection_scoped, c.connected), c.loses)
			<< c.sqlstate << " " << c.connection_scoped << " " << c.connected;
}

/* The cancel warnings by their text, translated ones by the function that raised them. */
TEST(SyncRep, CancelNoticesAreRecognisedByTextOrFunction)
{
	const struct
	{
		const char *message;
		const char *function;
		bool cancel;
	} cases[] = {
		{"canceling wait for synchronous replication due to user request", nullptr, true},
		{"canceling the wait for synchronous replication and terminating connection due "
		 "to administrator command",
		 nullptr, true},
		{"canceling wait for synchronous replication", "", true},
		{"Warten auf synchrone Replikation wird abgebrochen", "SyncRepWaitForLSN", true},
		{nullptr, "SyncRepWaitForLSN", true},
		{nullptr, nullptr, false},
		{"", "", false},
		{"canceling statement due to user request", "ProcessInterrupts", false},
		{"there is no transaction in progress", "EndTransactionBlock", false},
		{"canceling wait for synchronous", nullptr, false},
		{" canceling wait for synchronous replication", nullptr, false},
		{"Canceling wait for synchronous replication", nullptr, false},
		{nullptr, "SyncRepWaitForLSNx", false},
	};

	for (const auto &c : cases)
		EXPECT_EQ(IsSyncRepCancelNotice(c.message, c.function), c.cancel)
			<< (c.message ? c.message : "(null)") << " / "
			<< (c.function ? c.function : "(null)");
}

} /* namespace */
} /* namespace snowflake_lease */
