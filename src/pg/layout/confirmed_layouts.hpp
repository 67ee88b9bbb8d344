/*
 * confirmed_layouts.hpp
 *	  What the first snowflake_nextval() of earlier sessions found, shared
 *	  with the next ones, so that a new connection's first ID reads no
 *	  catalog.
 *
 * The full check reads pg_extension, pg_depend and the table: in a new
 * backend, whose catalog caches are cold, that cost more than the rest of
 * the connection.  When a check is shared: README.md (an update of the
 * extension only raises its version).  Creating or dropping a database
 * forgets its confirmations (CREATE DATABASE ... OID n TEMPLATE t brings
 * both OIDs back), and dropping an extension those of its database.  A
 * later session still needs SELECT on the table.
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
