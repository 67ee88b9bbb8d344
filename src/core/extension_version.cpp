/*
 * extension_version.cpp
 *	  Ordering the extension's versions.
 */
#include "extension_version.hpp"

namespace snowflake {
namespace {

struct Version
{
	unsigned long major;
	unsigned long minor;
};

/* Up to 9 digits at *text; advances it.  False if there is none. */
bool
ParseNumber(const char **text, unsigned long *value)
{
	int digits = 0;

	*value = 0;
	while (**text >= '0' && **text <= '9')
	{
		if (++digits > 9)
			return false;
		*value = *value * 10 + static_cast<unsigned long>(**text - '0');
		(*text)++;
	}
	return digits > 0;
}

bool
ParseVersion(const char *text, Version *version)
{
	if (text == nullptr || !ParseNumber(&text, &version->major) || *text != '.')
		return false;
	text++;
	return ParseNumber(&text, &version->minor) && *text == '\0';
}

} /* namespace */

bool
IsOlderVersion(const char *version, const char *reference)
{
	Version a;
	Version b;

	if (!ParseVersion(version, &a) || !ParseVersion(reference, &b))
		return false;
	return a.major < b.major || (a.major == b.major && a.minor < b.minor);
}

} /* namespace snowflake */
