/*
 * state_line.cpp
 *	  A strict parser for the one-line state files.
 */
#include "state_line.hpp"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace snowflake {

namespace {

/* How much of a bad field a problem quotes. */
constexpr size_t kQuotedFieldChars = 24;

/*
 * Copies the field [begin, end) into "out" (kQuotedFieldChars + 4 bytes)
 * for a message: bytes that are not printable ASCII become '?', and a long
 * field is cut with "...".
 */
void
QuoteField(const char *begin, const char *end, char *out)
{
	size_t		n = 0;

	for (const char *p = begin; p < end && n < kQuotedFieldChars; p++)
		out[n++] = (*p >= 0x20 && *p < 0x7f) ? *p : '?';
	if (static_cast<size_t>(end - begin) > kQuotedFieldChars)
	{
		memcpy(out + n, "...", 3);
		n += 3;
	}
	out[n] = '\0';
}

/* Parses one field [begin, end) as a decimal int64. */
bool
ParseField(const char *begin, const char *end, int64_t *value, char *problem)
{
	char		quoted[kQuotedFieldChars + 4];
	char		digits[32];
	const char *p = begin;
	size_t		length = static_cast<size_t>(end - begin);

	QuoteField(begin, end, quoted);
	if (p < end && *p == '-')
		p++;
	if (p == end)
	{
		snprintf(problem, kStateProblemSize, "\"%s\" is not a decimal integer.", quoted);
		return false;
	}
	for (; p < end; p++)
		if (*p < '0' || *p > '9')
		{
			snprintf(problem, kStateProblemSize, "\"%s\" is not a decimal integer.",
					 quoted);
			return false;
		}
	if (length >= sizeof(digits))
	{
		snprintf(problem, kStateProblemSize, "\"%s\" is out of range.", quoted);
		return false;
	}
	memcpy(digits, begin, length);
	digits[length] = '\0';

	char	   *stop = nullptr;

	errno = 0;
	long long	parsed = strtoll(digits, &stop, 10);

	if (errno == ERANGE)
	{
		snprintf(problem, kStateProblemSize, "\"%s\" is out of range.", quoted);
		return false;
	}
	if (errno != 0 || stop != digits + length)
	{
		snprintf(problem, kStateProblemSize, "\"%s\" is not a decimal integer.", quoted);
		return false;
	}
	*value = static_cast<int64_t>(parsed);
	return true;
}

}							/* namespace */

bool
ParseStateLine(const char *text, size_t length, int64_t *values, int count, char *problem)
{
	if (length == 0)
	{
		snprintf(problem, kStateProblemSize, "The file is empty.");
		return false;
	}

	const char *end = static_cast<const char *>(memchr(text, '\n', length));

	if (end == nullptr)
	{
		snprintf(problem, kStateProblemSize,
				 "The file does not end with a newline; it may have been cut short.");
		return false;
	}
	if (end != text + length - 1)
	{
		snprintf(problem, kStateProblemSize, "The file holds more than one line.");
		return false;
	}
	if (memchr(text, '\0', length) != nullptr)
	{
		snprintf(problem, kStateProblemSize, "The file holds a NUL byte.");
		return false;
	}
	if (end == text)
	{
		snprintf(problem, kStateProblemSize, "The line is empty.");
		return false;
	}

	int			fields = 1;

	for (const char *p = text; p < end; p++)
		if (*p == ' ')
			fields++;
	if (fields != count)
	{
		snprintf(problem, kStateProblemSize,
				 "The line holds %d space-separated fields, not %d.", fields, count);
		return false;
	}

	const char *begin = text;

	for (int i = 0; i < count; i++)
	{
		const char *stop = static_cast<const char *>(memchr(begin, ' ', end - begin));

		if (stop == nullptr)
			stop = end;
		if (!ParseField(begin, stop, &values[i], problem))
			return false;
		begin = stop + 1;
	}
	return true;
}

}							/* namespace snowflake */
