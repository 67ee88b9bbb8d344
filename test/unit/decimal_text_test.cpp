/*
 * decimal_text_test.cpp
 *	  Unit tests of the snowflake type's decimal input
 *	  (core/decimal_text.hpp).  Runs without a server.
 */
#include <cstdint>
#include <cstdio>

#include <gtest/gtest.h>

#include "core/decimal_text.hpp"

namespace snowflake {
namespace {

void
ExpectValue(const char *text, int64_t want)
{
	const DecimalValue got = ParseDecimalInt64(text);
	EXPECT_EQ(got.outcome, DecimalOutcome::kOk) << '"' << text << '"';
	EXPECT_EQ(got.value, want) << '"' << text << '"';
}

void
ExpectOutcome(const char *text, DecimalOutcome want)
{
	EXPECT_EQ(ParseDecimalInt64(text).outcome, want) << '"' << text << '"';
}

TEST(DecimalText, ReadsWhatBigintWritesAtTheEdges)
{
	ExpectValue("0", 0);
	ExpectValue("1", 1);
	ExpectValue("9007199254740993", INT64_C(9007199254740993));
	ExpectValue("9223372036854775807", INT64_MAX);
	ExpectValue("-9223372036854775808", INT64_MIN);
	ExpectValue("-1", -1);
}

TEST(DecimalText, ReadsASignLeadingZerosAndSurroundingSpaces)
{
	ExpectValue("+42", 42);
	ExpectValue("-0", 0);
	ExpectValue("  \t\n42 \r\f\v", 42);
	ExpectValue("000000000000000000000009223372036854775807", INT64_MAX);
}

TEST(DecimalText, RefusesAnythingElseAsSyntax)
{
	for (const char *text : {"", " ", "+", "-", "abc", "1a", "1 2", "0x10", "1_000", "1.0",
							 "1e3", "--1", "+-1", " - 1", "１"})
		ExpectOutcome(text, DecimalOutcome::kBadSyntax);
}

TEST(DecimalText, RefusesNumbersBeyondInt64AsOutOfRange)
{
	ExpectOutcome("9223372036854775808", DecimalOutcome::kOutOfRange);
	ExpectOutcome("-9223372036854775809", DecimalOutcome::kOutOfRange);
	ExpectOutcome("99999999999999999999999999", DecimalOutcome::kOutOfRange);
	ExpectOutcome("+9223372036854775808 ", DecimalOutcome::kOutOfRange);
}

TEST(DecimalText, SyntaxIsJudgedBeforeRange)
{
	/* bigint's input says "invalid input syntax" for these too. */
	ExpectOutcome("99999999999999999999x", DecimalOutcome::kBadSyntax);
}

TEST(DecimalText, RoundTripsEveryPowerOfTwoAndItsNeighbours)
{
	char text[32];
	for (int bit = 0; bit < 63; bit++)
	{
		const int64_t base = INT64_C(1) << bit;
		for (int64_t v : {base - 1, base, base + 1, -base, -base - 1})
		{
			snprintf(text, sizeof(text), "%lld", static_cast<long long>(v));
			ExpectValue(text, v);
		}
	}
}

} // namespace
} // namespace snowflake
