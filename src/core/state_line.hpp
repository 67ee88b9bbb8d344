/*
 * state_line.hpp
 *	  The content of a state file: one line of decimal integers, parsed
 *	  strictly.
 *
 * State line: exactly "count" decimal integers, each optionally negative,
 * separated by single spaces and ended by one newline, with no other byte
 * and no value beyond int64.  The extension keeps $PGDATA/snowflake.layout
 * and $PGDATA/snowflake.reservation in this form (src/pg/durable_file.hpp
 * reads and writes the files).  Nothing allocated.
 */
#ifndef SNOWFLAKE_CORE_STATE_LINE_HPP
#define SNOWFLAKE_CORE_STATE_LINE_HPP

#include <cstddef>
#include <cstdint>

namespace snowflake {

/* The most integers a state line holds. */
constexpr int kMaxStateFields = 9; /* snowflake.clock: its boot and 8 */

/* Room for the description of a parse failure. */
constexpr size_t kStateProblemSize = 160;

/*
 * Parses "text" ("length" bytes, not necessarily NUL-terminated) as a state
 * line of "count" integers (1 to kMaxStateFields) into "values".  Returns
 * false and describes the problem in "problem" (kStateProblemSize bytes),
 * as a sentence for a message's detail, if it is not one.
 */
bool		ParseStateLine(const char *text, size_t length, int64_t *values, int count,
						   char *problem);

}							/* namespace snowflake */

#endif							/* SNOWFLAKE_CORE_STATE_LINE_HPP */
