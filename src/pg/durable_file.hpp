/*
 * durable_file.hpp
 *	  Small one-line state files in the data directory, replaced atomically
 *	  and durably, and parsed strictly.
 *
 * Each holds one state line (src/core/state_line.hpp parses it).  Nothing
 * here allocates memory: these functions run once per reservation record
 * in long-lived processes and at postmaster exit.
 */
#ifndef SNOWFLAKE_PG_DURABLE_FILE_HPP
#define SNOWFLAKE_PG_DURABLE_FILE_HPP

extern "C"
{
#include "postgres.h"
}

#include "core/state_line.hpp"

/* The most integers a state file holds. */
constexpr int kMaxStateFields = snowflake::kMaxStateFields;

/* Room for the detail of a parse failure. */
constexpr size_t kStateProblemSize = snowflake::kStateProblemSize;

/* Writes $PGDATA/<name> into "path" (MAXPGPATH bytes), for any file. */
void		DataDirectoryFile(const char *name, char *path);

/*
 * Reads the state file "path", which holds a snowflake "what" (a noun for
 * messages), as exactly "count" integers into "values".  Returns false if
 * the file does not exist.  FATAL on a read failure, and on content that is
 * not such a line: the message names the file, the detail says what is
 * wrong, and "hint" says what to do.
 */
bool		ReadStateFile(const char *path, const char *what, int64 *values, int count,
						  const char *hint);

/* The FATAL (SQLSTATE XX001) for a state file whose content is unusable. */
[[noreturn]] void ReportCorruptStateFile(const char *path, const char *what,
										 const char *detail, const char *hint);

/*
 * Replaces "path" with the one-line state "values": a temporary file is
 * written and fsynced, renamed over the old one, and the directory fsynced,
 * so a crash leaves the old or the new content, never a mix.  A failure is
 * reported at "elevel" after the file descriptors are closed; below ERROR,
 * the function then returns false.
 */
bool		WriteStateFile(const char *path, const int64 *values, int count, int elevel);

#endif							/* SNOWFLAKE_PG_DURABLE_FILE_HPP */
