/*
 * epoch.hpp
 *	  Parsing of the snowflake.epoch setting.
 *
 * Accepted forms, always UTC:
 *	  YYYY-MM-DD
 *	  YYYY-MM-DD HH:MM[:SS[.fff]]	 (a 'T' may replace the space)
 * optionally followed by "Z", "+00" or "+00:00".
 */
#ifndef SNOWFLAKE_CORE_EPOCH_HPP
#define SNOWFLAKE_CORE_EPOCH_HPP

#include <cstdint>

namespace snowflake {

/* Parses "text" into Unix milliseconds.  Returns false if it is malformed. */
bool		ParseEpoch(const char *text, int64_t *unix_ms);

}							/* namespace snowflake */

#endif							/* SNOWFLAKE_CORE_EPOCH_HPP */
