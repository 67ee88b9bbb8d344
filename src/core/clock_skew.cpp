/*
 * clock_skew.cpp
 *	  Whether this node's clock disagrees with its peers' (clock_skew.hpp).
 */
#include "clock_skew.hpp"

namespace snowflake {

int64_t
ProvenDisagreementMs(const PeerClockReading &reading)
{
	/* Both proven can only mean the clocks moved between the readings: take the larger. */
	if (reading.self_ahead_ms > 0 && reading.self_ahead_ms >= reading.peer_ahead_ms)
		return reading.self_ahead_ms;
	if (reading.peer_ahead_ms > 0)
		return -reading.peer_ahead_ms;
	return 0;
}

ClockSkewSummary
SummarizeClockSkew(const PeerClockReading *readings, int count, int64_t threshold_ms)
{
	ClockSkewSummary summary{count, 0, 0, false};

	for (int i = 0; i < count; i++)
	{
		int64_t disagreement = ProvenDisagreementMs(readings[i]);
		int64_t size = disagreement < 0 ? -disagreement : disagreement;
		int64_t largest = summary.largest_ms < 0 ? -summary.largest_ms : summary.largest_ms;

		if (size > threshold_ms)
			summary.skewed_peers++;
		if (size > largest)
			summary.largest_ms = disagreement;
	}
	summary.skewed = summary.skewed_peers * 2 > summary.peers;
	return summary;
}

} // namespace snowflake
