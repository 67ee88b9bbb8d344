/*
 * decimal_text.cpp
 *	  Reading a snowflake's decimal text (decimal_text.hpp).
 */
#include "decimal_text.hpp"

namespace snowflake {
namespace {

bool
IsSpace(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

} // namespace

DecimalValue
ParseDecimalInt64(const char *text)
{
	const char *p = text;
	while (IsSpace(*p))
		p++;
	bool negative = false;
	if (*p == '+' || *p == '-')
		negative = (*p++ == '-');
	if (*p < '0' || *p > '9')
		return {DecimalOutcome::kBadSyntax, 0};

	/* Accumulated as a negative number, whose range reaches INT64_MIN. */
	int64_t value = 0;
	bool overflow = false;
	for (; *p >= '0' && *p <= '9'; p++)
	{
		const int digit = *p - '0';
		if (value < (INT64_MIN + digit) / 10)
			overflow = true;
		else
			value = value * 10 - digit;
	}
	while (IsSpace(*p))
		p++;
	if (*p != '\0')
		return {DecimalOutcome::kBadSyntax, 0};
	if (overflow || (!negative && value == INT64_MIN))
		return {DecimalOutcome::kOutOfRange, 0};
	return {DecimalOutcome::kOk, negative ? value : -value};
}

} // namespace snowflake
