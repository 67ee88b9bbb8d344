/*
 * generator.hpp
 *	  The snowflake algorithm itself: the next ID of a worker id after its
 *	  mark.
 *
 * Mark: the (timestamp, sequence) of the last ID issued under a worker id.
 * IDs are only ever issued strictly after the mark, so whoever continues
 * from a mark continues the ID stream without overlap.
 *
 * Mark word: the mark packed as the ID it names (timestamp, node, worker,
 * sequence).  Under one worker id the node and worker bits are fixed, so
 * the words order exactly as the marks do, and one 64-bit compare-and-swap
 * moves the mark.  That lets any number of processes share a worker id:
 * each reads the word, computes the next ID strictly after it and swaps it
 * in, retrying if another process got there first.  A worker id used by
 * one process never retries.
 *
 * Cell: where a mark word lives.  It offers Load() and
 * CompareExchange(expected&, desired) with the semantics of
 * std::atomic::compare_exchange_strong (on failure "expected" receives the
 * current word).  The server passes an adapter over pg_atomic_uint64, the
 * unit test std::atomic<uint64_t>, and Generator a plain variable.
 *
 * Drift: how far the timestamp of an ID runs ahead of the wall clock.  When
 * the sequence of a millisecond is used up, the next millisecond is
 * borrowed, but never beyond max_drift_ms ahead of "now"; past that the
 * caller is asked to wait.  A clock behind the mark is handled the same
 * way: IDs continue after the mark and the drift bound still applies.
 *
 * Reservation: the caller's durable promise of how far timestamps may go.
 * No timestamp beyond it is issued; the caller is asked to extend it first.
 *
 * Nothing here reads the clock: the caller passes "now" in, which keeps the
 * algorithm deterministic and testable.
 */
#ifndef SNOWFLAKE_CORE_GENERATOR_HPP
#define SNOWFLAKE_CORE_GENERATOR_HPP

#include <cstdint>
#include <type_traits>

#include "layout.hpp"

namespace snowflake {

struct Mark
{
	int64_t		timestamp;		/* ms since the layout's epoch */
	uint32_t	sequence;

	bool		operator<(const Mark &o) const
	{
		return timestamp < o.timestamp ||
			(timestamp == o.timestamp && sequence < o.sequence);
	}
};

static_assert(std::is_trivially_destructible_v<Mark>,
			  "src/pg keeps Mark on frames that ereport(ERROR) leaves by longjmp");

/* The mark that makes the first ID (floor_timestamp, 0). */
inline Mark
MarkBefore(const Layout &layout, int64_t floor_timestamp)
{
	return Mark{floor_timestamp - 1, layout.MaxSequence()};
}

enum class Outcome
{
	kIssued,					/* an ID was produced */
	kWait,						/* the wall clock must first reach a given time */
	kReserve,					/* the reservation must first reach a given time */
	kExhausted,					/* the layout's timestamp space is used up */
};

/*
 * The rules of one worker id: plain data, set once by Start().  The state
 * (the mark word) lives in a cell the caller passes in, so one SlotGenerator
 * may serve a cell shared with other processes.
 */
class SlotGenerator
{
public:
	/*
	 * Prepares to issue IDs for the given node and worker.  The caller
	 * guarantees both ids fit the layout.
	 */
	void		Start(const Layout &layout, uint32_t node_id, uint32_t worker_id,
					  int64_t max_drift_ms);

	/*
	 * The word of a mark.  A mark before timestamp 0 (nothing issued yet)
	 * becomes the word of (0, 0), which is where an unused cell starts.
	 */
	uint64_t	WordOf(Mark mark) const
	{
		if (mark.timestamp < 0)
			return fixed_bits_;
		return (static_cast<uint64_t>(mark.timestamp) << timestamp_shift_) |
			fixed_bits_ | mark.sequence;
	}

	Mark		MarkOf(uint64_t word) const
	{
		return Mark{static_cast<int64_t>(word >> timestamp_shift_),
					static_cast<uint32_t>(word) & max_sequence_};
	}

	/*
	 * The next ID after the cell's mark at wall-clock time "now", with
	 * timestamps reserved up to "reserved" (both in ms since the layout's
	 * epoch).
	 * kIssued: *result is the ID, and the cell's mark has moved to it.
	 * kWait: *result is the earliest "now" at which to call again.
	 * kReserve: *result is the timestamp the reservation must cover.
	 * kExhausted: the layout has no timestamps left.
	 * Except for kIssued, the cell is unchanged.
	 */
	template <typename Cell>
	Outcome		Next(Cell &cell, int64_t now, int64_t reserved, int64_t *result) const
	{
		uint32_t	count;

		return NextRun(cell, now, reserved, 1, result, &count);
	}

	/*
	 * Like Next(), but takes up to "want" (at least 1) consecutive IDs of
	 * one millisecond at once: on kIssued, *result is the first,
	 * *count (from 1 to "want") says how many, and the cell's mark has moved
	 * to the last.  A batch takes its IDs this way, with one clock read and
	 * one compare-and-swap per run instead of per ID.
	 */
	template <typename Cell>
	Outcome		NextRun(Cell &cell, int64_t now, int64_t reserved, uint32_t want,
						int64_t *result, uint32_t *count) const
	{
		uint64_t	word = cell.Load();

		for (;;)
		{
			int64_t		timestamp = static_cast<int64_t>(word >> timestamp_shift_);
			uint32_t	sequence = static_cast<uint32_t>(word) & max_sequence_;

			if (now > timestamp)
			{
				timestamp = now;
				sequence = 0;
			}
			else if (sequence < max_sequence_)
				sequence++;
			else
			{
				timestamp++;
				sequence = 0;
			}

			/* Before the wait: past the end, no clock ever issues it. */
			if (timestamp > max_timestamp_)
				return Outcome::kExhausted;
			if (timestamp - now > max_drift_ms_)
			{
				*result = timestamp - max_drift_ms_;
				return Outcome::kWait;
			}
			if (timestamp > reserved)
			{
				*result = timestamp;
				return Outcome::kReserve;
			}

			uint64_t	id = (static_cast<uint64_t>(timestamp) << timestamp_shift_) |
				fixed_bits_ | sequence;
			/* The run ends at the millisecond's last sequence number. */
			uint32_t	run = max_sequence_ - sequence < want - 1 ?
				max_sequence_ - sequence + 1 : want;

			/* On failure "word" is what another process put there: retry. */
			if (cell.CompareExchange(word, id + (run - 1)))
			{
				*result = static_cast<int64_t>(id);
				*count = run;
				return Outcome::kIssued;
			}
		}
	}

	/*
	 * Raises the cell's mark to at least "after", so that the next ID is
	 * strictly after it; a mark beyond it already stays.
	 */
	template <typename Cell>
	void		Raise(Cell &cell, Mark after) const
	{
		uint64_t	target = WordOf(after);
		uint64_t	word = cell.Load();

		while (word < target && !cell.CompareExchange(word, target))
			;
	}

private:
	uint64_t	fixed_bits_ = 0;	/* node_id and worker_id, in place */
	int			timestamp_shift_ = 0;
	uint32_t	max_sequence_ = 0;
	int64_t		max_timestamp_ = 0;
	int64_t		max_drift_ms_ = 0;
};

static_assert(std::is_trivially_destructible_v<SlotGenerator>,
			  "src/pg keeps a SlotGenerator in a static, and core types are plain "
			  "data (src/core/README.md)");

/*
 * A SlotGenerator with a cell of its own, for a worker id that one process
 * owns: the same algorithm, no atomics.
 */
class Generator
{
public:
	/* Prepares to issue IDs after "after"; see SlotGenerator::Start(). */
	void		Start(const Layout &layout, uint32_t node_id, uint32_t worker_id,
					  int64_t max_drift_ms, Mark after)
	{
		rules_.Start(layout, node_id, worker_id, max_drift_ms);
		cell_.word = rules_.WordOf(after);
	}

	/* See SlotGenerator::Next(). */
	Outcome		Next(int64_t now, int64_t reserved, int64_t *result)
	{
		return rules_.Next(cell_, now, reserved, result);
	}

	Mark		mark() const { return rules_.MarkOf(cell_.word); }

private:
	struct OwnCell
	{
		uint64_t	word;

		uint64_t	Load() const { return word; }
		bool		CompareExchange(uint64_t &expected, uint64_t desired)
		{
			if (word != expected)
			{
				expected = word;
				return false;
			}
			word = desired;
			return true;
		}
	};

	SlotGenerator rules_;
	OwnCell		cell_{0};
};

static_assert(std::is_trivially_destructible_v<Generator>,
			  "the core's types are plain data (src/core/README.md), so src/pg may "
			  "keep any of them where ereport(ERROR) can longjmp");

}							/* namespace snowflake */

#endif							/* SNOWFLAKE_CORE_GENERATOR_HPP */
