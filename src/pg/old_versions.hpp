/*
 * old_versions.hpp
 *	  What library 1.5 does about the SQL objects of older versions of the
 *	  extension, in a database not yet updated with ALTER EXTENSION
 *	  snowflake UPDATE.
 */
#ifndef SNOWFLAKE_PG_OLD_VERSIONS_HPP
#define SNOWFLAKE_PG_OLD_VERSIONS_HPP

/*
 * Installs the function manager hook that refuses every SECURITY DEFINER
 * function of the extension (version 1.4 had four) before its body runs.
 * Called once, from _PG_init in the postmaster.
 */
void InstallOldVersionGuard(void);

/* The library's version (snowflake.control's default_version), for messages. */
const char *LibraryVersion(void);

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
