// Clocks compared across nodes (core/clock_skew.hpp).
#include <gtest/gtest.h>

#include "core/clock_skew.hpp"

using snowflake::PeerClockReading;
using snowflake::ProvenDisagreementMs;
using snowflake::SummarizeClockSkew;

TEST(ClockSkew, OneReadingProvesOnlyAPeerAhead)
{
	// W - R = -60000: a minute of delay or a reader a minute ahead; nothing proven.
	EXPECT_EQ(ProvenDisagreementMs({-60000, 0}), 0);
	EXPECT_EQ(ProvenDisagreementMs({59990, 0}), -59990);
	// The peer's heartbeat says we are ahead.
	EXPECT_EQ(ProvenDisagreementMs({-60010, 59990}), 59990);
	// Both proven (the clocks moved between readings): the larger one.
	EXPECT_EQ(ProvenDisagreementMs({2000, 1500}), -2000);
	EXPECT_EQ(ProvenDisagreementMs({1500, 2000}), 2000);
}

TEST(ClockSkew, TwoNodesBothSkewed)
{
	const PeerClockReading behind[] = {{59990, 0}};
	const PeerClockReading ahead[] = {{-60010, 59990}};
	auto a = SummarizeClockSkew(behind, 1, 1000);
	auto b = SummarizeClockSkew(ahead, 1, 1000);

	EXPECT_EQ(a.peers, 1);
	EXPECT_EQ(a.skewed_peers, 1);
	EXPECT_EQ(a.largest_ms, -59990);
	EXPECT_TRUE(a.skewed);
	EXPECT_EQ(b.largest_ms, 59990);
	EXPECT_TRUE(b.skewed);
}

TEST(ClockSkew, ThreeNodesOnlyTheOddOneOut)
{
	// Node C is a minute ahead of A and B, which agree.
	const PeerClockReading at_a[] = {{-5, 0}, {59990, 0}}; // B, C
	const PeerClockReading at_c[] = {{-60010, 59990}, {-60010, 59985}};
	auto a = SummarizeClockSkew(at_a, 2, 1000);
	auto c = SummarizeClockSkew(at_c, 2, 1000);

	EXPECT_EQ(a.skewed_peers, 1);
	EXPECT_FALSE(a.skewed);
	EXPECT_EQ(c.skewed_peers, 2);
	EXPECT_TRUE(c.skewed);
	EXPECT_EQ(c.largest_ms, 59990);
}

TEST(ClockSkew, WithinTheThresholdOrNoPeer)
{
	const PeerClockReading close[] = {{900, 0}};
	auto s = SummarizeClockSkew(close, 1, 1000);

	EXPECT_EQ(s.skewed_peers, 0);
	EXPECT_EQ(s.largest_ms, -900);
	EXPECT_FALSE(s.skewed);
	auto none = SummarizeClockSkew(nullptr, 0, 1000);
	EXPECT_EQ(none.peers, 0);
	EXPECT_FALSE(none.skewed);
}
