/*
 * epoch.cpp
 *	  A strict parser for the UTC timestamps accepted by snowflake.epoch.
 */
#include "epoch.hpp"

#include <cstdint>

namespace snowflake {

namespace {

/* Reads exactly "width" digits at *p and advances past them. */
bool
ReadDigits(const char *&p, int width, int *value)
{
	int			v = 0;

	for (int i = 0; i < width; i++)
	{
		if (p[i] < '0' || p[i] > '9')
			return false;
		v = v * 10 + (p[i] - '0');
	}
	p += width;
	*value = v;
	return true;
}

bool
IsLeapYear(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

int
DaysInMonth(int y, int m)
{
	static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

	return (m == 2 && IsLeapYear(y)) ? 29 : days[m - 1];
}

/* Days from 1970-01-01 to the given civil date (proleptic Gregorian). */
int64_t
DaysFromCivil(int y, int m, int d)
{
	y -= m <= 2;
	const int64_t era = (y >= 0 ? y : y - 399) / 400;
	const int64_t yoe = y - era * 400;
	const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;

	return era * 146097 + doe - 719468;
}

/* Accepts the optional UTC designator and the end of the string. */
bool
AtUtcEnd(const char *p)
{
	if (*p == 'Z')
		p++;
	else if (p[0] == '+' && p[1] == '0' && p[2] == '0')
	{
		p += 3;
		if (p[0] == ':' && p[1] == '0' && p[2] == '0')
			p += 3;
	}
	return *p == '\0';
}

}							/* namespace */

bool
ParseEpoch(const char *text, int64_t *unix_ms)
{
	const char *p = text;
	int			year, month, day;
	int			hour = 0, minute = 0, second = 0, millis = 0;

	if (p == nullptr)
		return false;
	if (!ReadDigits(p, 4, &year) || *p++ != '-' ||
		!ReadDigits(p, 2, &month) || *p++ != '-' ||
		!ReadDigits(p, 2, &day))
		return false;
	if (month < 1 || month > 12 || day < 1 || day > DaysInMonth(year, month))
		return false;

	if (*p == ' ' || *p == 'T')
	{
		p++;
		if (!ReadDigits(p, 2, &hour) || *p++ != ':' || !ReadDigits(p, 2, &minute))
			return false;
		if (*p == ':')
		{
			p++;
			if (!ReadDigits(p, 2, &second))
				return false;
			if (*p == '.')
			{
				p++;
				if (!ReadDigits(p, 3, &millis))
					return false;
			}
		}
		if (hour > 23 || minute > 59 || second > 59)
			return false;
	}
	if (!AtUtcEnd(p))
		return false;

	*unix_ms = ((DaysFromCivil(year, month, day) * 24 + hour) * 60 + minute) * 60000 +
		second * 1000 + millis;
	return true;
}

}							/* namespace snowflake */
