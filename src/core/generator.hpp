/*
 * generator.hpp
 *	  The per-worker ID generator: the snowflake algorithm itself.
 *
 * One Generator belongs to one worker id held by one process, so it needs no
 * lock.  It never reads the clock: the caller passes "now" in, which keeps the
 * algorithm deterministic and testable.
 *
 * Mark: the (timestamp, sequence) of the last ID issued.  A generator only
 * ever issues IDs strictly after its mark, so starting it from a previous
 * holder's mark continues that holder's ID stream without overlap.
 *
 * Drift: how far the timestamp of an ID runs ahead of the wall clock.  When
 * the sequence of a millisecond is used up, the generator borrows the next
 * millisecond, but never beyond max_drift_ms ahead of "now"; past that it
 * asks the caller to wait.  A clock behind the mark is handled the same way:
 * IDs continue after the mark and the drift bound still applies.
 *
 * Reservation: the caller's durable promise of how far timestamps may go.
 * The generator never issues a timestamp beyond it; it asks the caller to
 * extend the reservation first.
 *
 * Part of the pure C++ core: no PostgreSQL header.
 */
#ifndef SNOWFLAKE_CORE_GENERATOR_HPP
#define SNOWFLAKE_CORE_GENERATOR_HPP

#include <cstdint>

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

class Generator
{
public:
	/*
	 * Prepares to issue IDs after "after" for the given node and worker.
	 * The caller guarantees both ids fit the layout.
	 */
	void		Start(const Layout &layout, uint32_t node_id, uint32_t worker_id,
					  int64_t max_drift_ms, Mark after);

	/*
	 * The next ID at wall-clock time "now", with timestamps reserved up to
	 * "reserved" (both in ms since the layout's epoch).
	 * kIssued: *result is the ID and the mark has moved to it.
	 * kWait: *result is the earliest "now" at which to call again.
	 * kReserve: *result is the timestamp the reservation must cover.
	 * kExhausted: the layout has no timestamps left.
	 * Except for kIssued, nothing changed.
	 */
	Outcome		Next(int64_t now, int64_t reserved, int64_t *result)
	{
		int64_t		timestamp;
		uint32_t	sequence;

		if (now > mark_.timestamp)
		{
			timestamp = now;
			sequence = 0;
		}
		else if (mark_.sequence < max_sequence_)
		{
			timestamp = mark_.timestamp;
			sequence = mark_.sequence + 1;
		}
		else
		{
			timestamp = mark_.timestamp + 1;
			sequence = 0;
		}

		if (timestamp - now > max_drift_ms_)
		{
			*result = timestamp - max_drift_ms_;
			return Outcome::kWait;
		}
		if (timestamp > max_timestamp_)
			return Outcome::kExhausted;
		if (timestamp > reserved)
		{
			*result = timestamp;
			return Outcome::kReserve;
		}

		mark_.timestamp = timestamp;
		mark_.sequence = sequence;
		*result = static_cast<int64_t>(
			(static_cast<uint64_t>(timestamp) << timestamp_shift_) |
			fixed_bits_ | sequence);
		return Outcome::kIssued;
	}

	Mark		mark() const { return mark_; }

private:
	Mark		mark_{0, 0};
	uint64_t	fixed_bits_ = 0;	/* node_id and worker_id, in place */
	int			timestamp_shift_ = 0;
	uint32_t	max_sequence_ = 0;
	int64_t		max_timestamp_ = 0;
	int64_t		max_drift_ms_ = 0;
};

}							/* namespace snowflake */

#endif							/* SNOWFLAKE_CORE_GENERATOR_HPP */
