/*
 * holder_text.hpp
 *	  The text a lease carries (its holder, the leasing connection's
 *	  application_name) is kept as printable ASCII, bytes 0x20 to 0x7E.
 *
 * Leases belong to the server, not to a database: every database shows
 * them, whatever its encoding.  Printable ASCII is valid text in every
 * encoding PostgreSQL runs a database in, so it reads the same
 * everywhere.  A grant refuses a holder with any other byte; text that
 * reaches a lease by another way (a lease image written by an earlier 1.5,
 * a row of 1.4's table) is cleaned as PostgreSQL 15 cleans a non-ASCII
 * application_name: each such byte becomes '?'.
 */
#ifndef SNOWFLAKE_CORE_HOLDER_TEXT_HPP
#define SNOWFLAKE_CORE_HOLDER_TEXT_HPP

#include <cstddef>

namespace snowflake {

/* Whether "byte" is printable ASCII (0x20 to 0x7E). */
constexpr bool
IsPrintableAscii(unsigned char byte)
{
	return byte >= 0x20 && byte <= 0x7E;
}

/*
 * The offset of the first byte of "text" ("length" bytes) that is not
 * printable ASCII; "length" if there is none.
 */
size_t FirstNonPrintableAscii(const char *text, size_t length);

/* Replaces each byte of the NUL-terminated "text" that is not printable ASCII by '?'. */
void CleanToPrintableAscii(char *text);

} // namespace snowflake

#endif
