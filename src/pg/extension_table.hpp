/*
 * extension_table.hpp
 *	  The extension's own tables, found by membership and touched by OID
 *	  through the table and index access methods, never by a name in a
 *	  schema.
 *
 * For code that runs with more rights than its caller, which must not
 * resolve a name (src/pg/README.md says why).  Writes behave as an INSERT
 * or DELETE for indexes, constraints, triggers and WAL; no SQL is parsed.
 *
 * Shape: the columns a caller relies on, by name and type, all NOT NULL;
 * the first key_count of them form the primary key, in order.  Values are
 * passed in the shape's column order.
 *
 * Everything here is plain data: these functions report errors by
 * longjmp.
 */
#ifndef SNOWFLAKE_PG_EXTENSION_TABLE_HPP
#define SNOWFLAKE_PG_EXTENSION_TABLE_HPP

extern "C"
{
#include "postgres.h"

#include "access/tableam.h"
#include "nodes/execnodes.h"
#include "storage/lockdefs.h"
#include "utils/rel.h"
#include "utils/snapshot.h"
}

constexpr int kMaxExtensionTableColumns = 16;

struct ExtensionColumn
{
	const char *name;
	Oid type;
};

struct ExtensionTableShape
{
	const char *relname;
	const ExtensionColumn *columns;
	int column_count;
	int key_count; /* the first key_count columns: the primary key */
};

/* An open, locked, checked table of the extension. */
struct ExtensionTable
{
	Relation rel;
	const ExtensionTableShape *shape;
	AttrNumber attnums[kMaxExtensionTableColumns]; /* of the shape's columns */
	Oid primary_key;
};

struct ExtensionTableScan
{
	const ExtensionTable *table;
	Snapshot snapshot;
	TableScanDesc scan;
	TupleTableSlot *slot;
};

struct ExtensionTableWrite
{
	const ExtensionTable *table;
	EState *estate;
	ResultRelInfo *result;
	EPQState epq;
	TupleTableSlot *row;   /* a row to insert, or a key to look for */
	TupleTableSlot *found; /* the row a key located */
};

/* The snowflake extension's OID in this database, or InvalidOid. */
Oid SnowflakeExtensionOid(void);

/*
 * Opens the member table shape->relname of "extension" by OID with
 * "lockmode" and checks its shape (ERROR if it is not the table the
 * extension's script created).  False, with nothing opened, if the
 * extension has no such member table.
 */
bool OpenExtensionTable(Oid extension, const ExtensionTableShape *shape, LOCKMODE lockmode,
						ExtensionTable *table);

/* Closes the table; its lock is kept to the end of the transaction. */
void CloseExtensionTable(ExtensionTable *table);

/* Reads every row visible to "snapshot". */
void BeginExtensionTableScan(const ExtensionTable *table, Snapshot snapshot,
							 ExtensionTableScan *scan);

/* The next row's values, valid until the next call; false at the end. */
bool NextExtensionTableRow(ExtensionTableScan *scan, Datum *values);
void EndExtensionTableScan(ExtensionTableScan *scan);

/*
 * Writes as an INSERT or DELETE statement would, in the current
 * transaction and with the current user's identity for triggers (nobody's
 * privileges are checked: callers decide who may write).  ERROR if the
 * table has a deferrable trigger, which would fire at commit as whoever
 * commits.  The caller holds RowExclusiveLock on the table, and an active
 * snapshot.
 */
void BeginExtensionTableWrite(const ExtensionTable *table, ExtensionTableWrite *write);
void InsertExtensionTableRow(ExtensionTableWrite *write, const Datum *values);

/*
 * Locates the row whose primary key is the key columns of "values", locks
 * it as DELETE would (waiting for a writer that holds it), copies its
 * values into "old_values" (by-reference ones stay valid until the next
 * call) and deletes it.  False if there is none.
 */
bool DeleteExtensionTableRowByKey(ExtensionTableWrite *write, const Datum *values,
								  Datum *old_values);

/* Fires the statement's queued AFTER triggers and frees the executor state. */
void EndExtensionTableWrite(ExtensionTableWrite *write);

#endif /* SNOWFLAKE_PG_EXTENSION_TABLE_HPP */
