/*
 * layout_registry.hpp
 *	  The layouts recorded in a database, and whether the running one may
 *	  issue IDs there.
 *
 * Layout history: the rows of the extension's snowflake_layout table.  Each
 * row says "IDs from first_id on use this layout".  CREATE EXTENSION records
 * the running layout with first_id 0; a provable successor (README.md)
 * records itself with first_id set to its smallest possible ID.
 *
 * Where two rows share a first_id (a dump restored over the row that
 * CREATE EXTENSION wrote), the one recorded first wins.
 */
#ifndef SNOWFLAKE_PG_LAYOUT_REGISTRY_HPP
#define SNOWFLAKE_PG_LAYOUT_REGISTRY_HPP

extern "C"
{
#include "postgres.h"
}

#include "core/layout.hpp"
#include "core/time_range.hpp"

/*
 * True while the running layout is known to be recorded in this database
 * by a committed transaction or by the current one.
 */
extern bool g_layout_confirmed;

/*
 * Makes sure the running layout is recorded in the database that holds the
 * function "fn_oid" (any function of the extension), recording it if it is a
 * provable successor.  ERROR if it conflicts with the recorded layout.
 */
void		EnsureRunningLayoutRecorded(Oid fn_oid);

/*
 * The snowflake_layout in which EnsureRunningLayoutRecorded() last found
 * the running layout, if a committed transaction recorded it there and the
 * current one, which may still roll back, has written nothing; else
 * InvalidOid.
 */
Oid			CommittedLayoutTable(void);

/*
 * The layout an ID was made with: the history as of this transaction, plus
 * the running layout when it is a provable, not yet recorded successor.
 */
const snowflake::Layout &LayoutForId(Oid fn_oid, int64 id);

/*
 * The layout in force at Unix time "unix_ms" in this database: the newest
 * one of LayoutForId()'s whose first ID's millisecond is not after it (the
 * oldest one for earlier times).
 */
const snowflake::Layout &LayoutForUnixMs(Oid fn_oid, int64 unix_ms);

/*
 * The segments LayoutForId() decodes with, in ID order: the history as of
 * this transaction, plus the running layout when it is a provable, not yet
 * recorded successor.  Valid until the next call into this file.
 */
int			LayoutSegmentsForIds(Oid fn_oid, const snowflake::LayoutSegment **segments);

/* "epoch …, N node bits, …", for messages. */
char	   *DescribeLayout(const snowflake::Layout &layout);

#endif							/* SNOWFLAKE_PG_LAYOUT_REGISTRY_HPP */
