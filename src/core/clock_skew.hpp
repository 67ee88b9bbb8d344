/*
 * clock_skew.hpp
 *	  Whether this node's clock disagrees with its peers', from their
 *	  registry heartbeats.
 *
 * Each heartbeat carries its writer's trusted clock at the time of writing
 * ("W").  A reader that sees the row at its own clock "R" knows that the
 * row was written before it was read, so
 *
 *	   writer's clock - reader's clock >= W - R
 *
 * whatever the replication delay: a delay only lowers W - R.  So one
 * reading proves a writer ahead of the reader, never a reader ahead of the
 * writer (R - W is skew plus delay).  The other side comes back in the
 * peer's own heartbeat: each writer lists the instances it found ahead of
 * it by more than the threshold, and by how much at least, and an
 * instance listed there knows that it is ahead by that much.  Both bounds
 * are certain: a replication delay can hide a skew, never make one up.
 */
#ifndef SNOWFLAKE_CORE_CLOCK_SKEW_HPP
#define SNOWFLAKE_CORE_CLOCK_SKEW_HPP

#include <cstdint>

namespace snowflake {

/* What this node knows of one running peer's clock (ms; <= 0: nothing). */
struct PeerClockReading
{
	int64_t peer_ahead_ms; /* W - R: the peer's clock is at least this far ahead */
	int64_t self_ahead_ms; /* the peer's heartbeat says ours is at least this far ahead */
};

/*
 * The certain disagreement with one peer, signed: positive when this
 * node's clock is ahead, negative when behind, 0 when neither is proven.
 */
int64_t ProvenDisagreementMs(const PeerClockReading &reading);

struct ClockSkewSummary
{
	int peers;          /* running peers whose clock was compared */
	int skewed_peers;   /* of those, how many disagree by more than the threshold */
	int64_t largest_ms; /* the proven disagreement of largest size, signed; 0: none */
	bool skewed;        /* this node disagrees with more than half of its peers */
};

/*
 * Sums up the readings of "count" peers.  "skewed" needs more than half:
 * with three nodes or more only the odd one out is skewed; with two,
 * neither can tell which clock is wrong, and both are.
 */
ClockSkewSummary SummarizeClockSkew(const PeerClockReading *readings, int count,
									int64_t threshold_ms);

} // namespace snowflake

#endif /* SNOWFLAKE_CORE_CLOCK_SKEW_HPP */
