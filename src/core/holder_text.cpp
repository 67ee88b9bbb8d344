/*
 * holder_text.cpp
 *	  Printable ASCII for the text a lease carries (holder_text.hpp).
 */
#include "holder_text.hpp"

namespace snowflake {

size_t
FirstNonPrintableAscii(const char *text, size_t length)
{
	for (size_t i = 0; i < length; i++)
		if (!IsPrintableAscii(static_cast<unsigned char>(text[i])))
			return i;
	return length;
}

void
CleanToPrintableAscii(char *text)
{
	for (char *p = text; *p != '\0'; p++)
		if (!IsPrintableAscii(static_cast<unsigned char>(*p)))
			*p = '?';
}

} // namespace snowflake
