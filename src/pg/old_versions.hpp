/*
 * old_versions.hpp
 *	  What the library does about a database whose extension is older than
 *	  the library, not yet updated with ALTER EXTENSION snowflake UPDATE.
 */
#ifndef SNOWFLAKE_PG_OLD_VERSIONS_HPP
#define SNOWFLAKE_PG_OLD_VERSIONS_HPP

/*
 * The extension's version in the current database (pg_extension.extversion)
 * if it is older than the library's, else nullptr (also when the extension
 * is not installed here).  Needs a transaction.
 */
const char *OutdatedExtensionVersion(void);

/*
 * Once per backend: a WARNING, with the fix as HINT, when the extension in
 * the current database is older than the library.  For the slow path of a
 * session's first ID, and the registry worker's first round after each
 * start (so the server log says it at every start).  Needs a transaction.
 * Returns whether the first call found it older.
 */
bool WarnOnceIfExtensionOutdated(void);

#endif /* SNOWFLAKE_PG_OLD_VERSIONS_HPP */
