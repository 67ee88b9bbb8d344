/*
 * durable_file.hpp
 *	  Small one-line state files in the data directory, replaced atomically
 *	  and durably.
 */
#ifndef SNOWFLAKE_PG_DURABLE_FILE_HPP
#define SNOWFLAKE_PG_DURABLE_FILE_HPP

#include "postgres_headers.hpp"

/* $PGDATA/<name>, allocated in the current memory context. */
char	   *DataDirectoryFile(const char *name);

/*
 * Reads up to size - 1 bytes of "path" into buf, NUL-terminated.  False if
 * the file does not exist; reports other failures at "elevel".
 */
bool		ReadSmallFile(const char *path, char *buf, size_t size, int elevel);

/*
 * Replaces "path" with "content": a temporary file is written and fsynced,
 * renamed over the old one, and the directory fsynced, so a crash leaves the
 * old or the new content, never a mix.  Failures are reported at "elevel"
 * (ERROR or higher) after the file descriptors are closed.
 */
void		WriteFileDurably(const char *path, const char *content, int elevel);

#endif							/* SNOWFLAKE_PG_DURABLE_FILE_HPP */
