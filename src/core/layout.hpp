/*
 * layout.hpp
 *	  The bit layout of a snowflake ID, and packing and unpacking of IDs.
 *
 * An ID is a non-negative int64.  From the top bit down:
 *
 *	  0 | timestamp | node_id | worker_id | sequence
 *
 * "timestamp" counts milliseconds since the layout's epoch (a Unix time in
 * milliseconds).  The timestamp takes whatever the other three fields leave
 * of the 63 usable bits.
 */
#ifndef SNOWFLAKE_CORE_LAYOUT_HPP
#define SNOWFLAKE_CORE_LAYOUT_HPP

#include <cstdint>
#include <type_traits>

namespace snowflake {

constexpr int kUsableBits = 63;
constexpr int kMinTimestampBits = 31;

/* Why a layout was refused; see CheckWidths(). */
enum class WidthProblem
{
	kOk,
	kNegativeWidth,
	kNoSequenceBits,
	kTimestampTooNarrow,
};

/* Why an epoch was refused for a layout at a given moment; see CheckEpoch(). */
enum class EpochProblem
{
	kOk,
	kInFuture,
	kExhausted,
};

/* The four fields of an ID. */
struct IdParts
{
	int64_t		timestamp;		/* ms since the layout's epoch */
	uint32_t	node_id;
	uint32_t	worker_id;
	uint32_t	sequence;
};

/*
 * No core type has a destructor: src/pg keeps them on frames that an
 * ereport(ERROR) longjmp leaves without running one, in palloc'd memory,
 * freed without running one, and in statics.  Each type says so here, so
 * that a member with a destructor (a std::string, say) fails the build.
 */
static_assert(std::is_trivially_destructible_v<IdParts>,
			  "src/pg keeps IdParts on frames that ereport(ERROR) leaves by longjmp");

struct Layout
{
	int64_t		epoch_ms = 0;	/* Unix time of timestamp 0, in ms */
	int			node_bits = 0;
	int			worker_bits = 0;
	int			sequence_bits = 0;

	int			TimestampBits() const
	{
		return kUsableBits - node_bits - worker_bits - sequence_bits;
	}
	int			WorkerShift() const { return sequence_bits; }
	int			NodeShift() const { return sequence_bits + worker_bits; }
	int			TimestampShift() const
	{
		return sequence_bits + worker_bits + node_bits;
	}

	uint32_t	MaxSequence() const { return Mask(sequence_bits); }
	uint32_t	MaxWorkerId() const { return Mask(worker_bits); }
	uint32_t	MaxNodeId() const { return Mask(node_bits); }
	int64_t		MaxTimestamp() const
	{
		return static_cast<int64_t>((uint64_t{1} << TimestampBits()) - 1);
	}
	/* Unix time (ms) of the last millisecond this layout can express. */
	int64_t		LastUnixMs() const { return epoch_ms + MaxTimestamp(); }

	bool		operator==(const Layout &o) const
	{
		return epoch_ms == o.epoch_ms && node_bits == o.node_bits &&
			worker_bits == o.worker_bits && sequence_bits == o.sequence_bits;
	}
	bool		operator!=(const Layout &o) const { return !(*this == o); }

private:
	static uint32_t Mask(int bits)
	{
		return static_cast<uint32_t>((uint64_t{1} << bits) - 1);
	}
};

static_assert(std::is_trivially_destructible_v<Layout>,
			  "src/pg keeps Layout in its settings and on frames that ereport(ERROR) "
			  "leaves by longjmp");

/* Checks the field widths: they must fit 63 bits and leave the timestamp 31. */
WidthProblem CheckWidths(const Layout &layout);

/*
 * Checks the epoch against the wall clock "now_unix_ms": it must not lie in
 * the future, and the layout must still be able to express "now".
 */
EpochProblem CheckEpoch(const Layout &layout, int64_t now_unix_ms);

/* Packs fields into an ID.  The caller guarantees each field is in range. */
inline int64_t
Compose(const Layout &layout, const IdParts &parts)
{
	uint64_t	id = static_cast<uint64_t>(parts.timestamp) << layout.TimestampShift();

	id |= static_cast<uint64_t>(parts.node_id) << layout.NodeShift();
	id |= static_cast<uint64_t>(parts.worker_id) << layout.WorkerShift();
	id |= parts.sequence;
	return static_cast<int64_t>(id);
}

/* Unpacks a non-negative ID. */
inline IdParts
Decompose(const Layout &layout, int64_t id)
{
	uint64_t	u = static_cast<uint64_t>(id);
	IdParts		parts;

	parts.timestamp = static_cast<int64_t>(u >> layout.TimestampShift());
	parts.node_id = static_cast<uint32_t>(u >> layout.NodeShift()) & layout.MaxNodeId();
	parts.worker_id = static_cast<uint32_t>(u >> layout.WorkerShift()) & layout.MaxWorkerId();
	parts.sequence = static_cast<uint32_t>(u) & layout.MaxSequence();
	return parts;
}

/*
 * The largest ID "layout" can have produced if it issued nothing with a
 * timestamp after Unix time "until_unix_ms".  INT64_MAX when that moment lies
 * past the end of the layout.
 */
int64_t		LargestIdUntil(const Layout &layout, int64_t until_unix_ms);

/*
 * The smallest ID "layout" can produce from Unix time "from_unix_ms" on.
 * -1 when that moment lies before the epoch or past the end of the layout.
 */
int64_t		SmallestIdFrom(const Layout &layout, int64_t from_unix_ms);

/*
 * Whether every ID "next" can issue from Unix time "next_from_unix_ms" on is
 * larger than every ID "previous" can have issued up to
 * "previous_until_unix_ms".  Only then may "next" replace "previous".
 */
bool		IsProvableSuccessor(const Layout &previous, int64_t previous_until_unix_ms,
								const Layout &next, int64_t next_from_unix_ms);

}							/* namespace snowflake */

#endif							/* SNOWFLAKE_CORE_LAYOUT_HPP */
