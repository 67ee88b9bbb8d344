/*
 * core_test.cpp
 *	  Unit tests of the pure C++ core: bit packing, layout checks, epoch
 *	  parsing, state-file lines, the reach of earlier runs, the generator under overflow and a clock behind its mark, and
 *	  the shared mark driven by several threads at once.  Runs without a
 *	  server.
 */
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/epoch.hpp"
#include "core/generator.hpp"
#include "core/layout.hpp"
#include "core/reach_ahead.hpp"
#include "core/state_line.hpp"

namespace snowflake {
namespace {

constexpr int64_t kEpoch2025 = 1735689600000;	/* 2025-01-01 00:00:00 UTC */
constexpr int64_t kUnreserved = INT64_MAX;		/* no reservation limit */

Layout
DefaultLayout()
{
	return Layout{kEpoch2025, 3, 7, 12};
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
	Layout layout{kEpoch2025, 0, 0, 12};
	IdParts back = Decompose(layout, Compose(layout, IdParts{77, 0, 0, 9}));

	EXPECT_EQ(back.timestamp, 77);
	EXPECT_EQ(back.sequence, 9u);
	EXPECT_EQ(Compose(layout, IdParts{77, 0, 0, 9}), (77 << 12) | 9);
}

TEST(Layout, WidthChecks)
{
	EXPECT_EQ(CheckWidths(DefaultLayout()), WidthProblem::kOk);
	/* 31 bits left for the timestamp: the minimum. */
	EXPECT_EQ(CheckWidths(Layout{kEpoch2025, 10, 10, 12}), WidthProblem::kOk);
	EXPECT_EQ(CheckWidths(Layout{kEpoch2025, 10, 10, 13}),
			  WidthProblem::kTimestampTooNarrow);
	EXPECT_EQ(CheckWidths(Layout{kEpoch2025, 10, 10, 0}), WidthProblem::kNoSequenceBits);
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
	Layout wider{kEpoch2025, 3, 7, 13};
	int64_t now = kEpoch2025 + 50000000000;		/* about 1.6 years in */

	/* One more low bit doubles every ID: the new layout is provably above. */
	EXPECT_GT(SmallestIdFrom(wider, now), LargestIdUntil(old_layout, now + 60000));
	/* And the reverse is provably not. */
	EXPECT_LT(SmallestIdFrom(old_layout, now), LargestIdUntil(wider, now + 60000));
	EXPECT_TRUE(IsProvableSuccessor(old_layout, now + 60000, wider, now));
	EXPECT_FALSE(IsProvableSuccessor(wider, now + 60000, old_layout, now));
	EXPECT_FALSE(IsProvableSuccessor(old_layout, now + 60000, old_layout, now));

	/* An earlier epoch lifts every ID; a later one lowers them. */
	Layout earlier{kEpoch2025 - 86400000, 3, 7, 12};

	EXPECT_TRUE(IsProvableSuccessor(old_layout, now + 60000, earlier, now));
	EXPECT_FALSE(IsProvableSuccessor(earlier, now + 60000, old_layout, now));

	/* Outside the layout's time range there is no bound. */
	EXPECT_EQ(SmallestIdFrom(old_layout, kEpoch2025 - 1), -1);
	EXPECT_EQ(LargestIdUntil(old_layout, old_layout.LastUnixMs()), INT64_MAX);
}

TEST(Epoch, AcceptedForms)
{
	const struct
	{
		const char *text;
		int64_t ms;
	} rows[] = {
		{"2025-01-01", kEpoch2025},
		{"2025-01-01 00:00:00+00", kEpoch2025},
		{"2025-01-01T00:00:01.250Z", kEpoch2025 + 1250},
		{"1970-01-01", 0},
		{"2024-02-29 12:30", 1709209800000},
		{"2010-11-04 01:42:54.657+00:00", 1288834974657}, /* Twitter's epoch */
	};

	for (const auto &row : rows)
	{
		int64_t ms = 0;

		SCOPED_TRACE(row.text);
		ASSERT_TRUE(ParseEpoch(row.text, &ms));
		EXPECT_EQ(ms, row.ms);
	}
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

/*
 * Parses the first "length" bytes of "text" (NULs included) from an
 * exact-size copy, so that a read past "length" is a heap overflow;
 * returns "" on success, else the problem.
 */
std::string
ParseLine(const std::string &text, size_t length, int64_t *values, int count)
{
	std::vector<char> bytes(text.begin(), text.end());
	char		problem[kStateProblemSize];

	problem[0] = '\0';
	if (ParseStateLine(bytes.data(), length, values, count, problem))
		return "";
	return problem;
}

std::string
ParseLine(const std::string &text, int64_t *values, int count)
{
	return ParseLine(text, text.size(), values, count);
}

TEST(StateLine, AcceptedLines)
{
	int64_t		values[kMaxStateFields] = {0};

	EXPECT_EQ(ParseLine("1735689600000 3 7 12\n", values, 4), "");
	EXPECT_EQ(values[0], kEpoch2025);
	EXPECT_EQ(values[1], 3);
	EXPECT_EQ(values[2], 7);
	EXPECT_EQ(values[3], 12);
	const struct
	{
		const char *line;
		int64_t		value;
	} rows[] = {
		{"-62167219200000\n", -62167219200000},
		{"9223372036854775807\n", INT64_MAX},
		{"-9223372036854775808\n", INT64_MIN},
		{"007\n", 7},
	};

	for (const auto &row : rows)
	{
		EXPECT_EQ(ParseLine(row.line, values, 1), "") << row.line;
		EXPECT_EQ(values[0], row.value) << row.line;
	}
}

const char *const kCutShort =
	"The file does not end with a newline; it may have been cut short.";

TEST(StateLine, RejectedLinesSayWhy)
{
	const std::string long_field(40, '9');
	const struct
	{
		std::string line;
		int			count;
		std::string problem;
	} rows[] = {
		{"", 1, "The file is empty."},
		{"12", 1, kCutShort},
		{"1\n2\n", 1, "The file holds more than one line."},
		{std::string("1\0 2\n", 5), 1, "The file holds a NUL byte."},
		{"\n", 1, "The line is empty."},
		{"1 2\n", 1, "The line holds 2 space-separated fields, not 1."},
		{"1  2\n", 2, "The line holds 3 space-separated fields, not 2."},
		{"1 2 3\n", 4, "The line holds 3 space-separated fields, not 4."},
		{"12a\n", 1, "\"12a\" is not a decimal integer."},
		{"-\n", 1, "\"-\" is not a decimal integer."},
		{"+5\n", 1, "\"+5\" is not a decimal integer."},
		{" 5\n", 1, "The line holds 2 space-separated fields, not 1."},
		{"1\t2\n", 1, "\"1?2\" is not a decimal integer."},
		{"9223372036854775808\n", 1, "\"9223372036854775808\" is out of range."},
		{long_field + "\n", 1, "\"" + std::string(24, '9') + "...\" is out of range."},
		{"1 x" + long_field + "\n", 2,
		 "\"x" + std::string(23, '9') + "...\" is not a decimal integer."},
		/* A line that fills the whole buffer, with no newline, is read no further. */
		{std::string(128, '1'), 1, kCutShort},
	};
	int64_t		values[kMaxStateFields] = {0};

	for (const auto &row : rows)
		EXPECT_EQ(ParseLine(row.line, values, row.count), row.problem) << row.line;
	/* The newline lies past "length": not seen. */
	EXPECT_EQ(ParseLine("5\n", 1, values, 1), kCutShort);
}

/* A generator of node 5, worker 17 under the default layout. */
class GeneratorTest : public ::testing::Test
{
protected:
	int64_t		Id(int64_t timestamp, uint32_t sequence) const
	{
		return Compose(layout, IdParts{timestamp, 5, 17, sequence});
	}

	Layout		layout = DefaultLayout();
	int64_t		id = 0;
};

TEST_F(GeneratorTest, FirstIdAtFloorThenCountsUp)
{
	Generator	g = StartedAt(layout, 1000);

	/* The clock is behind the floor: IDs start at the floor, sequence 0. */
	ASSERT_EQ(g.Next(500, kUnreserved, &id), Outcome::kIssued);
	EXPECT_EQ(id, Id(1000, 0));
	ASSERT_EQ(g.Next(500, kUnreserved, &id), Outcome::kIssued);
	EXPECT_EQ(id, Id(1000, 1));
}

TEST_F(GeneratorTest, NewMillisecondRestartsSequence)
{
	Generator	g = StartedAt(layout, 1000);

	ASSERT_EQ(g.Next(1000, kUnreserved, &id), Outcome::kIssued);
	ASSERT_EQ(g.Next(1000, kUnreserved, &id), Outcome::kIssued);
	ASSERT_EQ(g.Next(1003, kUnreserved, &id), Outcome::kIssued);
	EXPECT_EQ(id, Id(1003, 0));
}

TEST_F(GeneratorTest, OverflowBorrowsUpToMaxDriftThenWaits)
{
	Generator	g = StartedAt(layout, 1000, /* max_drift */ 3);
	int64_t		previous = -1;

	/* At a frozen clock, 4 ms of IDs fit: now and 3 borrowed ms. */
	for (int i = 0; i < 4 * 4096; i++)
	{
		ASSERT_EQ(g.Next(1000, kUnreserved, &id), Outcome::kIssued) << i;
		ASSERT_GT(id, previous);
		previous = id;
	}
	EXPECT_EQ(id, Id(1003, 4095));

	/* The next would be 4 ms ahead: wait until the clock reads 1001. */
	ASSERT_EQ(g.Next(1000, kUnreserved, &id), Outcome::kWait);
	EXPECT_EQ(id, 1001);
	/* Waiting changed nothing; at 1001 the ID is (1004, 0). */
	ASSERT_EQ(g.Next(1001, kUnreserved, &id), Outcome::kIssued);
	EXPECT_EQ(id, Id(1004, 0));
}

TEST_F(GeneratorTest, ZeroDriftWaitsForEachMillisecond)
{
	layout.sequence_bits = 1;
	Generator	g = StartedAt(layout, 10, /* max_drift */ 0);

	ASSERT_EQ(g.Next(10, kUnreserved, &id), Outcome::kIssued);
	ASSERT_EQ(g.Next(10, kUnreserved, &id), Outcome::kIssued);
	ASSERT_EQ(g.Next(10, kUnreserved, &id), Outcome::kWait);
	EXPECT_EQ(id, 11);
}

TEST_F(GeneratorTest, ClockBehindMarkNeverRepeatsOrDecreases)
{
	Generator	g = StartedAt(layout, 5000, /* max_drift */ 1000);
	std::set<int64_t> seen;
	int64_t		previous = -1;

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

TEST_F(GeneratorTest, ClockFarBehindWaitsInsteadOfRunningAhead)
{
	Generator	g = StartedAt(layout, 5000, /* max_drift */ 1000);

	ASSERT_EQ(g.Next(5000, kUnreserved, &id), Outcome::kIssued);
	/* One hour back: even the same millisecond would be 1 h ahead. */
	ASSERT_EQ(g.Next(5000 - 3600000, kUnreserved, &id), Outcome::kWait);
	EXPECT_EQ(id, 4000);
}

TEST_F(GeneratorTest, NewHolderContinuesAfterPreviousMark)
{
	Generator	first = StartedAt(layout, 1000);
	Generator	second;
	int64_t		next = 0;

	for (int i = 0; i < 10; i++)
		ASSERT_EQ(first.Next(1000, kUnreserved, &id), Outcome::kIssued);
	/* Same millisecond, next holder of the same worker id. */
	second.Start(layout, 5, 17, 1000, first.mark());
	ASSERT_EQ(second.Next(1000, kUnreserved, &next), Outcome::kIssued);
	EXPECT_EQ(next, id + 1);
}

TEST_F(GeneratorTest, NeverIssuesBeyondTheReservation)
{
	Generator	g = StartedAt(layout, 1000);

	/* Reserved up to 1000: the whole millisecond may be issued. */
	for (int i = 0; i < 4096; i++)
		ASSERT_EQ(g.Next(1000, 1000, &id), Outcome::kIssued) << i;
	/* The next one needs 1001 reserved first; nothing changes meanwhile. */
	ASSERT_EQ(g.Next(1000, 1000, &id), Outcome::kReserve);
	EXPECT_EQ(id, 1001);
	ASSERT_EQ(g.Next(1000, 1000, &id), Outcome::kReserve);
	/* Once reserved, it continues exactly where it stopped. */
	ASSERT_EQ(g.Next(1000, 1001, &id), Outcome::kIssued);
	EXPECT_EQ(id, Id(1001, 0));
}

TEST_F(GeneratorTest, ClockAheadOfReservationAsksForIt)
{
	Generator	g = StartedAt(layout, 1000);

	/* Idle for a while: the clock has passed the reservation. */
	ASSERT_EQ(g.Next(9000, 5000, &id), Outcome::kReserve);
	EXPECT_EQ(id, 9000);
}

TEST_F(GeneratorTest, DriftBoundComesBeforeTheReservation)
{
	Generator	g = StartedAt(layout, 5000, /* max_drift */ 100);

	/* Clock far behind the floor: waiting, not reserving, is the answer. */
	ASSERT_EQ(g.Next(1000, 0, &id), Outcome::kWait);
	EXPECT_EQ(id, 4900);
}

TEST_F(GeneratorTest, ExhaustedAtEndOfLayout)
{
	layout = Layout{kEpoch2025, 10, 10, 12};	/* 31 timestamp bits */
	int64_t		last = layout.MaxTimestamp();
	Generator	g;

	g.Start(layout, 0, 0, 1000, Mark{last, layout.MaxSequence()});
	EXPECT_EQ(g.Next(last, kUnreserved, &id), Outcome::kExhausted);
	/*
	 * A restart or promotion with the reservation at the last millisecond:
	 * the floor is one past it, a minute ahead of the clock.  No wait for
	 * the clock can help, so the answer is kExhausted, not kWait.
	 */
	EXPECT_EQ(g.Next(last - 60000, last, &id), Outcome::kExhausted);
}

/* The server's pg_atomic_uint64, counting the compare-and-swaps that lost a race. */
class AtomicCell
{
public:
	uint64_t	Load() const { return word_.load(); }
	bool		CompareExchange(uint64_t &expected, uint64_t desired)
	{
		if (word_.compare_exchange_strong(expected, desired))
			return true;
		lost_.fetch_add(1, std::memory_order_relaxed);
		return false;
	}
	uint64_t	lost() const { return lost_.load(); }

private:
	std::atomic<uint64_t> word_{0};
	std::atomic<uint64_t> lost_{0};
};

/* Raises an atomic to at least "value". */
void
RaiseAtomic(std::atomic<int64_t> &a, int64_t value)
{
	int64_t		current = a.load();

	while (current < value && !a.compare_exchange_weak(current, value))
		;
}

/*
 * A simulated wall clock and reservation, shared by the threads.  A thread
 * told to wait moves the clock to the time it waits for, as time passing
 * would; a thread told to reserve raises the reservation.  Every 997th
 * call, the clock steps back "step_back" ms, to exercise a clock behind
 * the mark under contention.
 */
struct World
{
	std::atomic<int64_t> now{1000};
	std::atomic<int64_t> reserved{1000};
	std::atomic<uint64_t> calls{0};
	int64_t		step_back = 0;
};

/*
 * Issues one ID (or a run of up to "want") from "cell", handling waits and
 * reservations as the server does, and checks it against the drift bound and
 * the reservation read before the call.
 */
template <typename Cell>
int64_t
IssueOne(const SlotGenerator &rules, Cell &cell, World &world, const Layout &layout,
		 int64_t max_drift, uint32_t want = 1, uint32_t *count = nullptr)
{
	for (;;)
	{
		uint64_t	call = world.calls.fetch_add(1);

		if (world.step_back > 0 && call % 997 == 996)
			world.now.fetch_sub(world.step_back);
		else if (call % 64 == 63)
			world.now.fetch_add(1);

		int64_t		now = world.now.load();
		int64_t		reserved = world.reserved.load();
		int64_t		result = 0;
		uint32_t	run = 0;

		switch (rules.NextRun(cell, now, reserved, want, &result, &run))
		{
			case Outcome::kIssued:
				EXPECT_LE(Decompose(layout, result).timestamp, now + max_drift);
				EXPECT_LE(Decompose(layout, result).timestamp, reserved);
				EXPECT_GE(run, 1u);
				EXPECT_LE(run, want);
				if (count != nullptr)
					*count = run;
				return result;
			case Outcome::kWait:
				EXPECT_GT(result, now);
				RaiseAtomic(world.now, result);
				break;
			case Outcome::kReserve:
				EXPECT_GT(result, reserved);
				RaiseAtomic(world.reserved, result + 3);
				break;
			case Outcome::kExhausted:
				ADD_FAILURE() << "exhausted";
				return -1;
		}
	}
}

/*
 * Fails on any ID that repeats across all threads, and unless each thread's
 * IDs strictly increase in the order issued; returns the total.
 */
size_t
CheckIds(const std::vector<std::vector<int64_t>> &per_thread)
{
	std::vector<int64_t> all;

	for (size_t t = 0; t < per_thread.size(); t++)
	{
		const std::vector<int64_t> &ids = per_thread[t];
		auto		down = std::adjacent_find(ids.begin(), ids.end(), std::greater_equal<>());

		EXPECT_TRUE(down == ids.end())
			<< "thread " << t << ", ID " << down - ids.begin() + 1;
		all.insert(all.end(), ids.begin(), ids.end());
	}
	std::sort(all.begin(), all.end());
	auto		repeat = std::adjacent_find(all.begin(), all.end());

	EXPECT_TRUE(repeat == all.end()) << "ID issued twice: " << *repeat;
	return all.size();
}

constexpr int kThreads = 6;
constexpr int kIdsPerThread = 200000;

/*
 * Several threads share one worker id's mark: no ID repeats, each thread's
 * IDs strictly increase, all lie within the drift bound and the
 * reservation, and the sequence field (6 bits, 64 IDs per ms) is shared
 * rather than multiplied.
 */
void
RunSharedSlot(int64_t step_back, uint32_t batch, uint64_t *lost)
{
	Layout		layout = DefaultLayout();

	layout.sequence_bits = 6;
	const int64_t max_drift = 2;
	SlotGenerator rules;
	AtomicCell	cell;
	World		world;
	std::vector<std::vector<int64_t>> per_thread(kThreads);
	std::atomic<int> ready{0};
	std::vector<std::thread> threads;

	world.step_back = step_back;
	rules.Start(layout, 5, 17, max_drift);
	rules.Raise(cell, MarkBefore(layout, 1000));
	for (int t = 0; t < kThreads; t++)
		threads.emplace_back([&, t]() {
			std::vector<int64_t> &ids = per_thread[t];

			ids.reserve(kIdsPerThread);
			ready.fetch_add(1);
			while (ready.load() < kThreads)
				;
			/* With batch > 1, the odd threads take runs, as batches do. */
			uint32_t	want = t % 2 == 1 ? batch : 1;

			while (ids.size() < size_t{kIdsPerThread})
			{
				uint32_t	count = 0;
				int64_t		first = IssueOne(rules, cell, world, layout, max_drift, want,
											 &count);

				for (uint32_t k = 0; k < count && ids.size() < size_t{kIdsPerThread}; k++)
					ids.push_back(first + k);
			}
		});
	for (auto &thread : threads)
		thread.join();

	EXPECT_EQ(CheckIds(per_thread), size_t{kThreads} * kIdsPerThread);
	for (const auto &ids : per_thread)
		for (int64_t id : ids)
		{
			IdParts		parts = Decompose(layout, id);

			ASSERT_EQ(parts.node_id, 5u);
			ASSERT_EQ(parts.worker_id, 17u);
		}
	/* The cell holds the largest ID issued (or one of a run cut short). */
	int64_t		largest = 0;

	for (const auto &ids : per_thread)
		largest = std::max(largest, ids.back());
	if (batch == 1)
		EXPECT_EQ(cell.Load(), static_cast<uint64_t>(largest));
	else
		EXPECT_GE(cell.Load(), static_cast<uint64_t>(largest));
	*lost = cell.lost();
}

/*
 * The threads must also have contended for the mark (a compare-and-swap
 * lost), or the run proved nothing about sharing it.  On a loaded machine
 * the scheduler may run them one after another, so the run is repeated,
 * each time with every check, until they did.
 */
constexpr int kContentionRuns = 10;

void
RunContendedSharedSlot(int64_t step_back, uint32_t batch = 1)
{
	uint64_t	lost = 0;

	for (int run = 0; run < kContentionRuns && lost == 0; run++)
	{
		RunSharedSlot(step_back, batch, &lost);
		if (::testing::Test::HasFailure())
			return;
	}
	if (std::thread::hardware_concurrency() > 1)
	{
		EXPECT_GT(lost, 0u) << "the threads never contended in " << kContentionRuns
							<< " runs";
	}
}

TEST(SharedSlot, ThreadsNeverRepeatAndEachIncreases)
{
	RunContendedSharedSlot(0);
}

/* Batches take runs of IDs; single calls and runs still never overlap. */
TEST(SharedSlot, RunsAndSingleIdsNeverOverlap)
{
	RunContendedSharedSlot(3, 7);
}

TEST(SharedSlot, ThreadsSurviveClockStepsBack)
{
	RunContendedSharedSlot(/* step_back */ 40);
}

/*
 * Threads that move between two worker ids, as sessions that release and
 * attach again: on each attach they raise the new cell past their own last
 * millisecond (as nextval.cpp does), so each thread's IDs still strictly
 * increase and none repeats.
 */
TEST(SharedSlot, SessionsMovingBetweenSlotsKeepTheirOrder)
{
	Layout		layout = DefaultLayout();

	layout.sequence_bits = 5;
	const int64_t max_drift = 3;
	SlotGenerator rules[2];
	AtomicCell	cells[2];
	World		world;
	std::vector<std::vector<int64_t>> per_thread(kThreads);
	std::vector<std::thread> threads;

	for (int w = 0; w < 2; w++)
	{
		rules[w].Start(layout, 1, static_cast<uint32_t>(w + 1), max_drift);
		rules[w].Raise(cells[w], MarkBefore(layout, 1000));
	}
	for (int t = 0; t < kThreads; t++)
		threads.emplace_back([&, t]() {
			std::vector<int64_t> &ids = per_thread[t];
			int			w = t % 2;

			for (int i = 0; i < kIdsPerThread / 4; i++)
			{
				if (i % 50 == 0)
				{
					w = 1 - w;
					if (!ids.empty())
						rules[w].Raise(cells[w],
									   Mark{Decompose(layout, ids.back()).timestamp,
											layout.MaxSequence()});
				}
				ids.push_back(IssueOne(rules[w], cells[w], world, layout, max_drift));
			}
		});
	for (auto &thread : threads)
		thread.join();

	EXPECT_EQ(CheckIds(per_thread), size_t{kThreads} * (kIdsPerThread / 4));
}

/* One SlotGenerator of node 5, worker 17 on a cell of its own. */
class SlotTest : public GeneratorTest
{
protected:
	void		SetUp() override { rules.Start(layout, 5, 17, 1000); }

	SlotGenerator rules;
	AtomicCell	cell;
	uint32_t	count = 0;
};

TEST_F(SlotTest, RaiseOnlyMovesForward)
{
	/* An unused cell holds the mark (0, 0). */
	EXPECT_EQ(rules.MarkOf(cell.Load()).timestamp, 0);
	rules.Raise(cell, MarkBefore(layout, 2000));
	ASSERT_EQ(rules.Next(cell, 1500, kUnreserved, &id), Outcome::kIssued);
	EXPECT_EQ(id, Id(2000, 0));
	/* A lower mark leaves the cell alone. */
	rules.Raise(cell, Mark{1999, 7});
	ASSERT_EQ(rules.Next(cell, 1500, kUnreserved, &id), Outcome::kIssued);
	EXPECT_EQ(id, Id(2000, 1));
	/* A higher one moves it: the next ID is right after it. */
	rules.Raise(cell, Mark{2000, 4095});
	ASSERT_EQ(rules.Next(cell, 1500, kUnreserved, &id), Outcome::kIssued);
	EXPECT_EQ(id, Id(2001, 0));
	EXPECT_EQ(rules.MarkOf(cell.Load()).timestamp, 2001);
}

/*
 * A run is consecutive IDs of one millisecond: it ends at the millisecond's
 * last sequence number, and the next ID follows its last.
 */
TEST_F(SlotTest, RunsStopAtTheEndOfTheMillisecond)
{
	rules.Raise(cell, MarkBefore(layout, 1000));
	ASSERT_EQ(rules.NextRun(cell, 1000, kUnreserved, 10, &id, &count), Outcome::kIssued);
	EXPECT_EQ(id, Id(1000, 0));
	EXPECT_EQ(count, 10u);
	ASSERT_EQ(rules.NextRun(cell, 1000, kUnreserved, 5000, &id, &count), Outcome::kIssued);
	EXPECT_EQ(id, Id(1000, 10));
	EXPECT_EQ(count, 4086u);
	EXPECT_EQ(cell.Load(), static_cast<uint64_t>(Id(1000, 4095)));
	/* Past the millisecond's end a run borrows the next one, like Next(). */
	ASSERT_EQ(rules.NextRun(cell, 1000, kUnreserved, 3, &id, &count), Outcome::kIssued);
	EXPECT_EQ(id, Id(1001, 0));
	EXPECT_EQ(count, 3u);
	ASSERT_EQ(rules.Next(cell, 1000, kUnreserved, &id), Outcome::kIssued);
	EXPECT_EQ(id, Id(1001, 3));
	/* The drift bound and the reservation refuse a run as they refuse an ID. */
	rules.Start(layout, 5, 17, 0);
	rules.Raise(cell, Mark{1001, 4095});
	uint64_t	before = cell.Load();

	EXPECT_EQ(rules.NextRun(cell, 1001, kUnreserved, 100, &id, &count), Outcome::kWait);
	EXPECT_EQ(rules.NextRun(cell, 1002, 1001, 100, &id, &count), Outcome::kReserve);
	EXPECT_EQ(cell.Load(), before);
}

/* Waits and reservations leave a shared cell untouched. */
TEST_F(SlotTest, RefusalsChangeNothing)
{
	rules.Start(layout, 5, 17, 0);
	rules.Raise(cell, Mark{1000, 4095});
	uint64_t	before = cell.Load();

	ASSERT_EQ(rules.Next(cell, 1000, kUnreserved, &id), Outcome::kWait);
	EXPECT_EQ(id, 1001);
	ASSERT_EQ(rules.Next(cell, 1001, 1000, &id), Outcome::kReserve);
	EXPECT_EQ(id, 1001);
	EXPECT_EQ(cell.Load(), before);
	ASSERT_EQ(rules.Next(cell, 1001, 1001, &id), Outcome::kIssued);
	EXPECT_EQ(id, Id(1001, 0));
}

/* Earlier runs reach a day and a minute past the start, or their reservation if further. */
TEST(ReachAhead, StartPlusTheLargestDriftAndReserve)
{
	EXPECT_EQ(kMaxReachAheadMs, INT64_C(86460000));
	EXPECT_EQ(EarlierIdsReachUnixMs(kEpoch2025, -1), kEpoch2025 + 86460000);
	/* A reservation behind that bound changes nothing. */
	EXPECT_EQ(EarlierIdsReachUnixMs(kEpoch2025, kEpoch2025 + 1000), kEpoch2025 + 86460000);
	EXPECT_EQ(EarlierIdsReachUnixMs(kEpoch2025, kEpoch2025 + 86460000),
			  kEpoch2025 + 86460000);
	/* The clock was stepped back by more than a day since the reservation. */
	EXPECT_EQ(EarlierIdsReachUnixMs(kEpoch2025, kEpoch2025 + 86460001),
			  kEpoch2025 + 86460001);
	EXPECT_EQ(EarlierIdsReachUnixMs(0, kEpoch2025), kEpoch2025);
}

}							/* namespace */
}							/* namespace snowflake */
