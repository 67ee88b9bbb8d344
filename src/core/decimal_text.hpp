/*
 * decimal_text.hpp
 *	  Reading a snowflake's decimal text: what bigint's input accepts on
 *	  every PostgreSQL version, and nothing more.
 *
 * The snowflake type is written in decimal, as bigint is.  Its input
 * parses here rather than in int8in so that its errors name the type
 * snowflake, and so that it accepts the same text on PostgreSQL 15 as on
 * 16 and later (whose int8in also reads 0x, 0o, 0b and underscores): an
 * optional sign, decimal digits, and spaces before and after, as isspace()
 * in the C locale counts them.
 */
#ifndef SNOWFLAKE_CORE_DECIMAL_TEXT_HPP
#define SNOWFLAKE_CORE_DECIMAL_TEXT_HPP

#include <cstdint>
#include <type_traits>

namespace snowflake {

enum class DecimalOutcome
{
	kOk,
	kBadSyntax,  /* not an optional sign and digits between spaces */
	kOutOfRange, /* digits of a number beyond int64's range */
};

struct DecimalValue
{
	DecimalOutcome outcome;
	int64_t value; /* when outcome is kOk */
};

static_assert(std::is_trivially_destructible_v<DecimalValue>,
			  "src/pg returns DecimalValue across ereport()");

/* Parses the NUL-terminated "text". */
DecimalValue ParseDecimalInt64(const char *text);

} // namespace snowflake

#endif
