/*
 * confirmed_layouts.hpp
 *	  What the first snowflake_nextval() of earlier sessions found, shared
 *	  with the next ones, so that a new connection's first ID reads no
 *	  catalog.
 *
 * A session's first ID checks that the extension in its database is not
 * older than the library and that the running layout is recorded in the
 * database's snowflake_layout, reading pg_extension, pg_depend and the
 * table: in a new backend, whose catalog caches are cold, that cost more
 * than the rest of the connection.  Once a session has found both, from
 * committed rows, it shares the answer with the server's later sessions in
 * the same database, keyed by the OID of the function called: a DROP and
 * CREATE EXTENSION gives the function a new OID, so a new extension is
 * checked anew; an update only raises the version; the layout changes only
 * with a restart, which empties this memory.  Creating or dropping a
 * database forgets its confirmations (CREATE DATABASE ... OID n TEMPLATE t
 * brings both OIDs back), and dropping an extension those of its database.
 * A later session still reads the history as itself: it needs SELECT on
 * the table, as the check did.
 */
#ifndef SNOWFLAKE_PG_LAYOUT_CONFIRMED_LAYOUTS_HPP
#define SNOWFLAKE_PG_LAYOUT_CONFIRMED_LAYOUTS_HPP

extern "C"
{
#include "postgres.h"

#include "catalog/objectaccess.h"
}

/* Its part of the shared-memory hooks, which module.cpp installs. */
void		RequestConfirmedLayouts(void);
void		StartConfirmedLayouts(void);

/* Its part of the object-access hook: forgets what a CREATE or DROP makes stale. */
void		ForgetConfirmedLayoutsOnAccess(ObjectAccessType access, Oid class_id, Oid object_id);

/*
 * Whether an earlier session of this server run found, for the function
 * "fn_oid" in the current database, the extension at the library's version
 * and the running layout recorded.  If so, ERROR unless the current user
 * may read the layout table (as the check would); false if that table is
 * gone or renamed, so that the caller checks in full.
 */
bool		LayoutConfirmedEarlier(Oid fn_oid);

/*
 * Shares that the function "fn_oid" found the extension in the current
 * database at the library's version and the running layout recorded in
 * "table" by a committed transaction.  Silently does nothing when the
 * memory is full: sessions then check in full.
 */
void		ShareLayoutConfirmation(Oid fn_oid, Oid table);

#endif							/* SNOWFLAKE_PG_LAYOUT_CONFIRMED_LAYOUTS_HPP */
