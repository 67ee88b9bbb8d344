/*
 * extension_version.hpp
 *	  Ordering the extension's versions ("1.4" < "1.5" < "1.10").
 *
 * A version is "MAJOR.MINOR", both decimal numbers, as snowflake.control's
 * default_version and pg_extension.extversion spell it.
 */
#ifndef SNOWFLAKE_CORE_EXTENSION_VERSION_HPP
#define SNOWFLAKE_CORE_EXTENSION_VERSION_HPP

namespace snowflake {

/*
 * Whether "version" comes before "reference".  False when either is not
 * of the form MAJOR.MINOR: an unknown version is never called older.
 */
bool IsOlderVersion(const char *version, const char *reference);

} /* namespace snowflake */

#endif /* SNOWFLAKE_CORE_EXTENSION_VERSION_HPP */
