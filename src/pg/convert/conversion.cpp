/*
 * conversion.cpp
 *	  snowflake_convert_column(): a serial or identity key, and the columns
 *	  that reference it, to bigint DEFAULT snowflake_nextval() (README.md).
 */
extern "C"
{
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/skey.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_class.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/plannodes.h"
#include "parser/parse_func.h"
#include "rewrite/rewriteHandler.h"
#include "storage/lmgr.h"
#include "tcop/tcopprot.h"
#include "tcop/utility.h"
#include "utils/array.h"
#include "access/stratnum.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"
}

#include "pg/clock_watch.hpp"
#include "pg/convert/conversion_queries.hpp"
#include "pg/settings.hpp"
#include "pg/timestamps.hpp"

namespace {

/* One call's state: plain data in the call's memory, no destructor. */
struct Conversion
{
	const char *function; /* for messages */
	Oid caller;           /* must own every table it changes */
	Oid table;
	const char *rel_name;
	const char *column;
	AttrNumber key_attnum;
	Oid key_type;
	char key_identity;
	Oid nextval_fn; /* the extension's snowflake_nextval() */
	/* The columns that change (the key first unless it needs no change),
	 * and for a referencing column why: its foreign key. */
	List *w_rel, *w_att, *w_via;
	/* The report: the key, then the referencing columns. */
	List *r_rel, *r_att, *r_type, *r_action;
	List *locked;
	/* The schemas LockSchema() locked, and their names as the locked rows
	 * read: the only schema names its statements use. */
	List *nsp_oids, *nsp_names;
	Oid seq_oid;    /* the serial's sequence */
	bool seq_owned; /* whether the column owns it */
	const char *key_action;
};

/* Fails with SQLSTATE code and these texts; detail may be nullptr. */
[[noreturn]] void
Refuse(int code, const char *message, const char *detail, const char *hint)
{
	ereport(ERROR,
			(errcode(code), errmsg("%s", message),
			 detail != nullptr ? errdetail("%s", detail) : 0, errhint("%s", hint)));
}

const char *
QualifiedName(Oid relid)
{
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									  get_rel_name(relid));
}

/* Locks schema nsp until commit (README.md) and returns the name its locked row holds. */
const char *
LockSchema(Conversion *c, Oid nsp)
{
	ListCell *oid_cell, *name_cell;
	TM_Result result = TM_Deleted;
	const char *name = nullptr;

	forboth(oid_cell, c->nsp_oids, name_cell, c->nsp_names)
	{
		if (lfirst_oid(oid_cell) == nsp)
			return static_cast<const char *>(lfirst(name_cell));
	}
	/* First the lock that creating an object in the schema takes, so that a
	 * drop or rename waits before it holds what our ALTER TABLE needs. */
	LockDatabaseObject(NamespaceRelationId, nsp, 0, AccessShareLock);
	HeapTuple cached = SearchSysCache1(NAMESPACEOID, ObjectIdGetDatum(nsp));

	if (HeapTupleIsValid(cached))
	{
		ItemPointerData tid = cached->t_self;
		TM_FailureData tmfd;
		bool isnull;

		ReleaseSysCache(cached);
		Relation rel = table_open(NamespaceRelationId, RowShareLock);
		TupleTableSlot *slot = table_slot_create(rel, nullptr);

		result = table_tuple_lock(rel, &tid, GetLatestSnapshot(), slot,
								  GetCurrentCommandId(false), LockTupleKeyShare,
								  LockWaitBlock, TUPLE_LOCK_FLAG_FIND_LAST_VERSION, &tmfd);
		if (result == TM_Ok &&
			DatumGetObjectId(slot_getattr(slot, Anum_pg_namespace_oid, &isnull)) == nsp)
			name = pstrdup(NameStr(
				*DatumGetName(slot_getattr(slot, Anum_pg_namespace_nspname, &isnull))));
		ExecDropSingleTupleTableSlot(slot);
		table_close(rel, NoLock);
	}
	if (result == TM_Deleted)
		Refuse(ERRCODE_INVALID_SCHEMA_NAME,
			   psprintf("a schema that %s() was to name was dropped while it waited for it",
						c->function),
			   psprintf("The schema had OID %u.", nsp), "Call it again.");
	if (name == nullptr)
		Refuse(
			ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
			psprintf("%s() could not lock the catalog row of the schema with OID %u",
					 c->function, nsp),
			psprintf(
				"Locking the row returned %d; this transaction changed the schema itself.",
				static_cast<int>(result)),
			"Call it in a transaction that does not alter the schema.");
	c->nsp_oids = lappend_oid(c->nsp_oids, nsp);
	c->nsp_names = lappend(c->nsp_names, const_cast<char *>(name));
	return name;
}

/* relid's name for a statement, its schema locked by LockSchema(). */
const char *
LockedName(Conversion *c, Oid relid)
{
	return quote_qualified_identifier(LockSchema(c, get_rel_namespace(relid)),
									  get_rel_name(relid));
}

/* Not read-only: each query takes a new snapshot, and sees what was committed
 * while the call waited for its locks, and the call's own changes. */
uint64
CatalogQuery(const char *sql, int nargs, Oid *types, Datum *values)
{
	int rc = SPI_execute_with_args(sql, nargs, types, values, nullptr, false, 0);

	if (rc != SPI_OK_SELECT)
		elog(ERROR, "snowflake: catalog query failed: %s", SPI_result_code_string(rc));
	return SPI_processed;
}

const char *
TextAt(uint64 row, int col)
{
	char *value = SPI_getvalue(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col);

	return value != nullptr ? value : "";
}

Datum
DatumAt(uint64 row, int col, bool *isnull)
{
	return SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col, isnull);
}

/* The oid[] of "list", or with "names" the name[] of its strings. */
Datum
ListArray(List *list, bool names)
{
	Datum *items = static_cast<Datum *>(palloc0(sizeof(Datum) * (list_length(list) + 1)));
	int n = 0;
	ListCell *lc;

	foreach (lc, list)
	{
		Name name = names ? static_cast<Name>(palloc0(NAMEDATALEN)) : nullptr;

		if (name != nullptr)
			namestrcpy(name, static_cast<const char *>(lfirst(lc)));
		items[n++] = name != nullptr ? NameGetDatum(name) :
									   ObjectIdGetDatum(lfirst_oid(lc));
	}
	return PointerGetDatum(
		names ? construct_array(items, n, NAMEOID, NAMEDATALEN, false, TYPALIGN_CHAR) :
				construct_array(items, n, OIDOID, sizeof(Oid), true, TYPALIGN_INT));
}

/* Extension ext's snowflake_nextval() without arguments, by its pg_depend entry. */
Oid
ExtensionNextval(Oid ext)
{
	Relation depend = table_open(DependRelationId, AccessShareLock);
	ScanKeyData keys[2];
	HeapTuple tuple;
	Oid found = InvalidOid;

	ScanKeyInit(&keys[0], Anum_pg_depend_refclassid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(ExtensionRelationId));
	ScanKeyInit(&keys[1], Anum_pg_depend_refobjid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(ext));
	SysScanDesc scan = systable_beginscan(depend, DependReferenceIndexId, true, nullptr, 2,
										  keys);
	while (!OidIsValid(found) && HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		Form_pg_depend dep = reinterpret_cast<Form_pg_depend>(GETSTRUCT(tuple));
		HeapTuple proc;

		if (dep->classid != ProcedureRelationId || dep->deptype != DEPENDENCY_EXTENSION ||
			!HeapTupleIsValid(
				proc = SearchSysCache1(PROCOID, ObjectIdGetDatum(dep->objid))))
			continue;
		Form_pg_proc form = reinterpret_cast<Form_pg_proc>(GETSTRUCT(proc));

		if (strcmp(NameStr(form->proname), "snowflake_nextval") == 0 && form->pronargs == 0)
			found = dep->objid;
		ReleaseSysCache(proc);
	}
	systable_endscan(scan);
	table_close(depend, AccessShareLock);
	return found;
}

/* The extension's objects this call uses, by the extension's membership. */
void
FindExtensionObjects(Conversion *c, Oid fn_oid)
{
	Oid ext = getExtensionOfObject(ProcedureRelationId, fn_oid);

	if (!OidIsValid(ext))
		Refuse(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
			   psprintf("%s() is not a member of extension snowflake", c->function),
			   psprintf("The function with OID %u belongs to no extension.", fn_oid),
			   "Call the function that CREATE EXTENSION snowflake created.");
	c->nextval_fn = ExtensionNextval(ext);
	if (!OidIsValid(c->nextval_fn))
		Refuse(
			ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
			"extension snowflake has no function snowflake_nextval()",
			"No function snowflake_nextval() without arguments is a member of the extension.",
			"Update the extension with ALTER EXTENSION snowflake UPDATE.");
}

Oid
RelOwner(Oid relid, const char **relname)
{
	HeapTuple tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid owner;

	if (!HeapTupleIsValid(tuple))
		return InvalidOid;
	owner = reinterpret_cast<Form_pg_class>(GETSTRUCT(tuple))->relowner;
	*relname = pstrdup(NameStr(reinterpret_cast<Form_pg_class>(GETSTRUCT(tuple))->relname));
	ReleaseSysCache(tuple);
	return owner;
}

/* Why the table top's columns change, if a foreign key is the reason. */
const char *
ViaOf(const Conversion *c, Oid top)
{
	ListCell *rel, *via;

	forboth(rel, c->w_rel, via, c->w_via)
	{
		if (lfirst_oid(rel) == top && lfirst(via) != nullptr)
			return static_cast<const char *>(lfirst(via));
	}
	return nullptr;
}

/* The calling role itself must own every table in rels, their partitions and
 * child tables: ALTER TABLE runs their CHECK code with the caller's rights,
 * and a superuser or a member of the owner passes every ownership check. */
void
CheckOwners(const Conversion *c, List *rels)
{
	ListCell *top_cell, *rel_cell;

	foreach (top_cell, rels)
	{
		Oid top = lfirst_oid(top_cell);
		List *tree = find_all_inheritors(top, NoLock, nullptr);
		const char *top_name = nullptr;

		if (!OidIsValid(RelOwner(top, &top_name)))
			continue;
		foreach (rel_cell, tree)
		{
			Oid relid = lfirst_oid(rel_cell);
			const char *relname = nullptr;
			Oid owner = RelOwner(relid, &relname);
			const char *via = ViaOf(c, top);
			const char *why;

			if (!OidIsValid(owner) || owner == c->caller)
				continue;
			if (relid != top)
				why = psprintf(
					"It is a partition or child table of table \"%s\", whose columns change with it.",
					top_name);
			else if (via != nullptr)
				why = psprintf("%s.", via);
			else if (top != c->table)
				why =
					"It is at the other end of a foreign key on a column that changes, which ALTER TABLE drops, creates again and checks.";
			else
				why = psprintf("Column \"%s\" of table \"%s\" is to take snowflake IDs.",
							   c->column, c->rel_name);
			Refuse(
				ERRCODE_INSUFFICIENT_PRIVILEGE,
				psprintf("table \"%s\" is owned by role \"%s\", not by the calling role",
						 relname, GetUserNameFromId(owner, false)),
				psprintf(
					"%s ALTER TABLE checks the CHECK constraints and foreign keys of the tables it changes again with the rights of the role that runs it, so code of the table's owner would run with yours.",
					why),
				psprintf(
					"Run %s() in a session of the role that owns every table it changes, logged in as %s (SET ROLE from a more privileged session is no boundary: the owner's code could RESET ROLE), or change the owner of the table, then call it again. A key that tables of several owners reference needs their foreign keys dropped, and created again after the conversion.",
					c->function, quote_identifier(GetUserNameFromId(owner, false))));
		}
	}
}

/* Locks rels, their partitions and child tables by OID: one renamed or
 * replaced during the wait is still the one locked. */
void
LockByOid(const Conversion *c, List *rels)
{
	ListCell *lc;

	foreach (lc, rels)
	{
		Oid relid = lfirst_oid(lc);

		LockRelationOid(relid, AccessExclusiveLock);
		if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
			Refuse(
				ERRCODE_UNDEFINED_TABLE,
				psprintf(
					"a table that %s() was to change was dropped while it waited for its lock",
					c->function),
				psprintf("The table had OID %u.", relid), "Call it again.");
		(void) find_all_inheritors(relid, AccessExclusiveLock, nullptr);
	}
}

/* The column must become bigint, so be an integer that a bigint holds. */
void
CheckInteger(const char *attname, const char *relname, Oid type, const char *detail,
			 const char *hint)
{
	if (type != INT2OID && type != INT4OID && type != INT8OID)
		Refuse(
			ERRCODE_DATATYPE_MISMATCH,
			psprintf(
				"column \"%s\" of table \"%s\" is of type %s, not smallint, integer or bigint",
				attname, relname, format_type_be(type)),
			detail, hint);
}

/* convert_column's key: a serial or identity column of an integer type. */
void
CheckSerialKey(Conversion *c)
{
	Oid types[3] = {OIDOID, INT2OID, OIDOID};
	Datum values[3] = {ObjectIdGetDatum(c->table), Int16GetDatum(c->key_attnum),
					   ObjectIdGetDatum(c->nextval_fn)};
	const char *hint =
		"To give it snowflake IDs anyway, make it bigint and set its default with ALTER TABLE: ALTER COLUMN ... TYPE bigint, ALTER COLUMN ... SET DEFAULT snowflake_nextval().";
	const char *neither =
		psprintf("column \"%s\" of table \"%s\" is neither a serial nor an identity column",
				 c->column, c->rel_name);
	bool isnull;

	CheckInteger(
		c->column, c->rel_name, c->key_type,
		"Its values are no integers that a bigint holds unchanged.",
		"snowflake_convert_column() converts smallserial, serial, bigserial and identity columns.");
	if (c->key_identity != '\0')
	{
		c->key_action = c->key_identity == ATTRIBUTE_IDENTITY_ALWAYS ?
			"GENERATED ALWAYS AS IDENTITY" :
			"GENERATED BY DEFAULT AS IDENTITY";
		return;
	}
	if (CatalogQuery(kDefaultQuery, 3, types, values) == 0)
		Refuse(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE, neither, "It has no default.",
			   hint);
	const char *default_expr = TextAt(0, 1);

	if (DatumGetBool(DatumAt(0, 2, &isnull)))
		Refuse(
			ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
			psprintf("column \"%s\" of table \"%s\" already takes snowflake IDs", c->column,
					 c->rel_name),
			psprintf("Its default is %s.", default_expr),
			"Nothing is left to convert; ALTER TABLE ... ALTER COLUMN ... TYPE snowflake makes it the type snowflake (docs/snowflake-type.md).");
	if (!DatumGetBool(DatumAt(0, 4, &isnull)) || isnull)
		Refuse(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE, neither,
			   psprintf("Its default is %s, not nextval() of a sequence.", default_expr),
			   hint);
	c->seq_oid = DatumGetObjectId(DatumAt(0, 3, &isnull));
	c->seq_owned = DatumGetBool(DatumAt(0, 5, &isnull));
	c->key_action = pstrdup(default_expr);
}

/* The key column, read once its table is locked. */
void
CheckKey(Conversion *c)
{
	HeapTuple tuple = SearchSysCacheAttName(c->table, c->column);

	if (!HeapTupleIsValid(tuple))
		Refuse(ERRCODE_UNDEFINED_COLUMN,
			   psprintf("column \"%s\" of table \"%s\" does not exist", c->column,
						c->rel_name),
			   nullptr, "Pass the name of a column of the table, as \\d shows it.");
	Form_pg_attribute att = reinterpret_cast<Form_pg_attribute>(GETSTRUCT(tuple));
	bool generated = att->attgenerated != '\0';
	bool inherited = att->attinhcount > 0;

	c->key_attnum = att->attnum;
	c->key_type = att->atttypid;
	c->key_identity = att->attidentity;
	ReleaseSysCache(tuple);
	if (c->key_attnum < 0)
		Refuse(ERRCODE_FEATURE_NOT_SUPPORTED,
			   psprintf("cannot convert system column \"%s\"", c->column), nullptr,
			   "Pass a column of the table's own.");
	if (generated)
		Refuse(
			ERRCODE_FEATURE_NOT_SUPPORTED,
			psprintf("cannot convert generated column \"%s\" of table \"%s\"", c->column,
					 c->rel_name),
			"A generated column computes its values; it has no serial default or identity to replace.",
			"Convert the serial or identity column the generated column is computed from.");
	if (inherited)
	{
		Oid types[1] = {OIDOID};
		Datum values[1] = {ObjectIdGetDatum(c->table)};
		const char *roots = "";

		if (CatalogQuery(kRootsQuery, 1, types, values) > 0)
			roots = TextAt(0, 1);
		Refuse(
			ERRCODE_INVALID_TABLE_DEFINITION,
			psprintf("cannot convert inherited column \"%s\" of table \"%s\"", c->column,
					 c->rel_name),
			"Partitions and child tables share the column of the table they inherit it from.",
			psprintf(
				"Convert the column of %s; the conversion reaches every partition and child table.",
				roots));
	}
	CheckSerialKey(c);
}

bool
Changes(const Conversion *c, Oid relid, const char *attname)
{
	ListCell *rel, *att;

	forboth(rel, c->w_rel, att, c->w_att)
	{
		if (lfirst_oid(rel) == relid &&
			strcmp(static_cast<const char *>(lfirst(att)), attname) == 0)
			return true;
	}
	return false;
}

/* The key and the columns referencing it, directly or through other keys. */
void
CollectReferences(Conversion *c)
{
	Oid types[2] = {OIDOID, INT2OID};
	Datum values[2] = {ObjectIdGetDatum(c->table), Int16GetDatum(c->key_attnum)};
	uint64 rows;

	c->r_rel = list_make1_oid(c->table);
	c->r_att = list_make1(pstrdup(c->column));
	c->r_type = list_make1_oid(c->key_type);
	c->r_action = NIL;
	c->w_rel = c->w_att = c->w_via = NIL;
	if (c->key_type != INT8OID)
	{
		c->w_rel = list_make1_oid(c->table);
		c->w_att = list_make1(pstrdup(c->column));
		c->w_via = list_make1(nullptr);
	}

	rows = CatalogQuery(kReferencesQuery, 2, types, values);
	for (uint64 row = 0; row < rows; row++)
	{
		bool isnull;
		Oid relid = DatumGetObjectId(DatumAt(row, 1, &isnull));
		const char *attname = TextAt(row, 2);
		Oid type = DatumGetObjectId(DatumAt(row, 3, &isnull));
		bool inherited = DatumGetBool(DatumAt(row, 5, &isnull));
		const char *relname = TextAt(row, 6);
		const char *conname = TextAt(row, 7);
		const char *ref_attname = TextAt(row, 8);
		const char *ref_relname = TextAt(row, 9);
		const char *via = psprintf(
			"It references column \"%s\" of table \"%s\" through foreign key \"%s\", so it must become bigint too",
			ref_attname, ref_relname, conname);

		CheckInteger(
			attname, relname, type, psprintf("%s.", via),
			"Drop the foreign key, convert the column, then create the foreign key again on a column of a matching type.");
		c->r_rel = lappend_oid(c->r_rel, relid);
		c->r_att = lappend(c->r_att, pstrdup(attname));
		c->r_type = lappend_oid(c->r_type, type);
		c->r_action = lappend(c->r_action,
							  psprintf("references %s(%s) through %s",
									   quote_identifier(ref_relname),
									   quote_identifier(ref_attname),
									   quote_identifier(conname)));
		if (type == INT8OID || Changes(c, relid, attname))
			continue;
		if (inherited)
			Refuse(
				ERRCODE_INVALID_TABLE_DEFINITION,
				psprintf("cannot convert inherited column \"%s\" of table \"%s\"", attname,
						 relname),
				psprintf("%s, and only the table it is inherited from can change its type.",
						 via),
				"Make the column bigint in the table it is inherited from first.");
		c->w_rel = lappend_oid(c->w_rel, relid);
		c->w_att = lappend(c->w_att, pstrdup(attname));
		c->w_via = lappend(c->w_via, pstrdup(via));
	}
}

/* The tables at either end of a changing column's foreign keys, not locked yet. */
List *
TablesToLock(const Conversion *c)
{
	Oid types[4] = {OIDARRAYOID, NAMEARRAYOID, OIDARRAYOID, OIDARRAYOID};
	Datum values[4] = {ListArray(c->w_rel, false), ListArray(c->w_att, true),
					   ListArray(c->r_rel, false), ListArray(c->locked, false)};
	uint64 rows = CatalogQuery(kTablesToLockQuery, 4, types, values);
	List *rels = NIL;
	bool isnull;

	for (uint64 row = 0; row < rows; row++)
		rels = lappend_oid(rels, DatumGetObjectId(DatumAt(row, 1, &isnull)));
	return rels;
}

/* ALTER COLUMN ... TYPE parses again the expressions that use the column: refuse
 * those naming non-built-in objects, and the uses PostgreSQL refuses itself. */
void
CheckBlockers(const Conversion *c)
{
	ListCell *rel, *att, *via_cell;

	forthree(rel, c->w_rel, att, c->w_att, via_cell, c->w_via)
	{
		const char *attname = static_cast<const char *>(lfirst(att));
		const char *via = lfirst(via_cell) != nullptr ?
			static_cast<const char *>(lfirst(via_cell)) :
			"The column must become bigint";
		Oid types[2] = {OIDOID, NAMEOID};
		NameData name;
		Datum values[2] = {ObjectIdGetDatum(lfirst_oid(rel)), NameGetDatum(&name)};
		bool isnull;

		namestrcpy(&name, attname);
		if (CatalogQuery(kBlockerQuery, 2, types, values) == 0)
			continue;
		const char *what = TextAt(0, 1);
		const char *relname = TextAt(0, 2);
		int rank = DatumGetInt32(DatumAt(0, 3, &isnull));
		const char *hint = psprintf("Drop %s, convert the column, then create it again.",
									what);

		if (rank == 0)
			Refuse(
				ERRCODE_INVALID_TABLE_DEFINITION,
				psprintf("column \"%s\" is part of the partition key of table \"%s\"",
						 attname, relname),
				psprintf(
					"%s, and PostgreSQL cannot change the type of a partition key column.",
					via),
				"Only a partition key that is bigint already can be converted.");
		if (rank == 7)
			Refuse(
				ERRCODE_FEATURE_NOT_SUPPORTED,
				psprintf(
					"column \"%s\" of table \"%s\" is used by %s, which names functions, operators or types that are not built in",
					attname, relname, what),
				psprintf(
					"%s, and a change of type makes PostgreSQL parse that definition again and evaluate it over the rewritten rows, where a function or operator that another role made, or a look-alike of the same name that takes a bigint, could run with your rights.",
					via),
				hint);
		Refuse(
			ERRCODE_FEATURE_NOT_SUPPORTED,
			psprintf("column \"%s\" of table \"%s\" is used by %s", attname, relname, what),
			psprintf(
				"%s, and PostgreSQL cannot change the type of a column that a view, rule, trigger, policy, generated column, SQL function body or publication uses.",
				via),
			hint);
	}
}

/* The largest value of the key over the table and its descendants. */
bool
LargestValue(const Conversion *c, int64 *largest)
{
	List *tree = find_all_inheritors(c->table, AccessExclusiveLock, nullptr);
	Snapshot snapshot = RegisterSnapshot(GetLatestSnapshot());
	bool found = false;
	ListCell *lc;

	foreach (lc, tree)
	{
		Oid relid = lfirst_oid(lc);
		Relation rel = table_open(relid, AccessExclusiveLock);
		AttrNumber attnum = get_attnum(relid, c->column);

		/* Its rows lie elsewhere: reading them would run its wrapper's code. */
		if (rel->rd_rel->relkind == RELKIND_FOREIGN_TABLE)
			Refuse(
				ERRCODE_FEATURE_NOT_SUPPORTED,
				psprintf("cannot check the values of foreign table \"%s\"",
						 RelationGetRelationName(rel)),
				psprintf(
					"It is a partition or child table of table \"%s\", and every existing value of column \"%s\" must lie below the snowflake IDs issued from now on; %s() reads no foreign rows.",
					c->rel_name, c->column, c->function),
				"Detach the foreign table (ALTER TABLE ... DETACH PARTITION or NO INHERIT), convert the column, make sure the foreign rows' values lie below the IDs issued now, then attach it again.");
		if (RELKIND_HAS_STORAGE(rel->rd_rel->relkind) && attnum != InvalidAttrNumber)
		{
			TupleTableSlot *slot = table_slot_create(rel, nullptr);
			TableScanDesc scan = table_beginscan(rel, snapshot, 0, nullptr);
			Oid type = get_atttype(relid, attnum);
			bool isnull;

			while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
			{
				Datum value = slot_getattr(slot, attnum, &isnull);

				if (isnull)
					continue;
				int64 v = type == INT2OID ? DatumGetInt16(value) :
					type == INT4OID       ? DatumGetInt32(value) :
											DatumGetInt64(value);

				if (!found || v > *largest)
					*largest = v;
				found = true;
			}
			table_endscan(scan);
			ExecDropSingleTupleTableSlot(slot);
		}
		table_close(rel, NoLock);
	}
	UnregisterSnapshot(snapshot);
	return found;
}

/* The key's largest value in the shards if Citus distributes the table (its
 * coordinator's table holds no rows).  Citus's catalog lies in pg_catalog, where
 * only a superuser creates tables; the query names the table in its locked schema. */
bool
ShardLargestValue(Conversion *c, int64 *largest)
{
	Oid types[1] = {OIDOID};
	Datum values[1] = {ObjectIdGetDatum(c->table)};
	bool isnull;

	if (CatalogQuery(kCitusCatalogQuery, 0, nullptr, nullptr) == 0 ||
		CatalogQuery(kCitusTableQuery, 1, types, values) == 0)
		return false;
	CatalogQuery(psprintf("SELECT max(%s)::pg_catalog.int8 FROM %s",
						  quote_identifier(c->column), LockedName(c, c->table)),
				 0, nullptr, nullptr);
	Datum value = DatumAt(0, 1, &isnull);

	if (isnull)
		return false;
	*largest = DatumGetInt64(value);
	return true;
}

/* Every existing value must lie below the IDs issued from now on. */
void
CheckExistingValues(Conversion *c)
{
	int64 largest = 0;
	int64 in_shards = 0;
	const snowflake::Layout &layout = g_settings.layout;

	/* Makes sure IDs can be issued here at all. */
	(void) OidFunctionCall0(c->nextval_fn);
	int64 floor_id = NowTimestamp() << layout.TimestampShift();
	bool found = LargestValue(c, &largest);

	if (ShardLargestValue(c, &in_shards) && (!found || in_shards > largest))
	{
		largest = in_shards;
		found = true;
	}
	if (!found || largest < floor_id)
		return;

	int64 ts = largest >> layout.TimestampShift();
	const char *when = "lies beyond the timestamps of the snowflake layout";

	if (ts <= layout.MaxTimestamp())
		when = psprintf("is the snowflake ID of %s",
						DatumGetCString(
							DirectFunctionCall1(timestamptz_out,
												TimestampTzGetDatum(UnixMsToTimestampTz(
													layout.epoch_ms + ts)))));
	Refuse(
		ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
		psprintf(
			"column \"%s\" of table \"%s\" has values at or above the snowflake IDs issued now",
			c->column, c->rel_name),
		psprintf("Its largest value, " INT64_FORMAT ", %s.", largest, when),
		"New IDs must be larger than every existing value: renumber the rows below the snowflake ID range, or convert the column after that time.");
}

/* A statement built from relid's name reached, or would reach, another relation
 * (a schema renamed, another put in its place): the error rolls all back. */
[[noreturn]] void
RefuseRenamed(const Conversion *c, Oid relid, const char *sql, const char *when)
{
	Refuse(
		ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
		psprintf("%s() refuses: statement \"%s\" %s", c->function, sql, when),
		psprintf(
			"The call wrote it from the names of the relation it locked, now %s, and of the extension's snowflake_nextval(); a schema was renamed, or an object put in its place, before it ran. Nothing was converted.",
			QualifiedName(relid)),
		"Only roles you trust should own the schemas of the tables and of extension snowflake; look at what changed, then call it again.");
}

/* The relation that a parsed ALTER TABLE or DROP SEQUENCE names, now. */
Oid
NamedRelation(Node *stmt)
{
	if (IsA(stmt, AlterTableStmt))
		return RangeVarGetRelid(reinterpret_cast<AlterTableStmt *>(stmt)->relation, NoLock,
								true);
	if (IsA(stmt, DropStmt) &&
		list_length(reinterpret_cast<DropStmt *>(stmt)->objects) == 1)
		return RangeVarGetRelid(makeRangeVarFromNameList(static_cast<List *>(
									linitial(reinterpret_cast<DropStmt *>(stmt)->objects))),
								NoLock, true);
	return InvalidOid;
}

/* Whether every SET DEFAULT of stmt names the extension's snowflake_nextval(). */
bool
DefaultsNameNextval(const Conversion *c, Node *stmt)
{
	ListCell *lc;

	if (!IsA(stmt, AlterTableStmt))
		return true;
	foreach (lc, reinterpret_cast<AlterTableStmt *>(stmt)->cmds)
	{
		AlterTableCmd *cmd = static_cast<AlterTableCmd *>(lfirst(lc));

		if (cmd->subtype != AT_ColumnDefault)
			continue;
		if (cmd->def == nullptr || !IsA(cmd->def, FuncCall) ||
			LookupFuncName(reinterpret_cast<FuncCall *>(cmd->def)->funcname, 0, nullptr,
						   true) != c->nextval_fn)
			return false;
	}
	return true;
}

/* Runs sql, built from relid's name, through ProcessUtility as a query of its own,
 * as PL/pgSQL's EXECUTE does, so that utility hooks (Citus) and event triggers see
 * it; each statement must still name relid and the extension's function. */
void
RunStatement(const Conversion *c, Oid relid, const char *sql)
{
	List *parsed = pg_parse_query(sql);
	ListCell *lc;

	foreach (lc, parsed)
	{
		RawStmt *raw = static_cast<RawStmt *>(lfirst(lc));
		PlannedStmt *pstmt = makeNode(PlannedStmt);

		if (NamedRelation(raw->stmt) != relid || !DefaultsNameNextval(c, raw->stmt))
			RefuseRenamed(c, relid, sql, "names other objects than the call locked");
		pstmt->commandType = CMD_UTILITY;
		pstmt->canSetTag = false;
		pstmt->utilityStmt = raw->stmt;
		pstmt->stmt_location = raw->stmt_location;
		pstmt->stmt_len = raw->stmt_len;
		ProcessUtility(pstmt, sql, false, PROCESS_UTILITY_QUERY, nullptr, nullptr,
					   None_Receiver, nullptr);
		CommandCounterIncrement();
	}
}

/* Whether column attname of relid is now of type type, and no identity. */
bool
IsPlainColumn(Oid relid, const char *attname, Oid type)
{
	HeapTuple tuple = SearchSysCacheAttName(relid, attname);
	bool ok = false;

	if (HeapTupleIsValid(tuple))
	{
		Form_pg_attribute att = reinterpret_cast<Form_pg_attribute>(GETSTRUCT(tuple));

		ok = att->atttypid == type && att->attidentity == '\0';
		ReleaseSysCache(tuple);
	}
	return ok;
}

/* Whether the key's default, on its table and each descendant, calls the
 * extension's snowflake_nextval() and nothing else. */
bool
DefaultIsNextval(const Conversion *c)
{
	List *tree = find_all_inheritors(c->table, AccessExclusiveLock, nullptr);
	ListCell *lc;

	foreach (lc, tree)
	{
		Relation rel = table_open(lfirst_oid(lc), NoLock);
		AttrNumber attnum = get_attnum(RelationGetRelid(rel), c->column);
		Node *expr = attnum == InvalidAttrNumber ? nullptr :
												   build_column_default(rel, attnum);
		bool ok = expr != nullptr && IsA(expr, FuncExpr) &&
			reinterpret_cast<FuncExpr *>(expr)->funcid == c->nextval_fn;

		table_close(rel, NoLock);
		if (!ok)
			return false;
	}
	return true;
}

/* One ALTER TABLE per table, the key's first with its new default (which reaches
 * its partitions and child tables), each checked by OID once it ran. */
void
ApplyChanges(Conversion *c)
{
	List *order = list_make1_oid(c->table);
	ListCell *lc, *rel, *att;

	/* Every schema these statements name is locked before any is written. */
	foreach (lc, c->w_rel)
		order = list_append_unique_oid(order, lfirst_oid(lc));
	foreach (lc, order)
		(void) LockSchema(c, get_rel_namespace(lfirst_oid(lc)));
	const char *nextval =
		quote_qualified_identifier(LockSchema(c, get_func_namespace(c->nextval_fn)),
								   get_func_name(c->nextval_fn));

	if (c->key_identity != '\0')
	{
		const char *sql = psprintf("ALTER TABLE %s ALTER COLUMN %s DROP IDENTITY",
								   LockedName(c, c->table), quote_identifier(c->column));

		RunStatement(c, c->table, sql);
		if (!IsPlainColumn(c->table, c->column, c->key_type))
			RefuseRenamed(c, c->table, sql, "left the key an identity column");
	}
	foreach (lc, order)
	{
		Oid relid = lfirst_oid(lc);
		StringInfoData sql;
		const char *sep = "";

		initStringInfo(&sql);
		appendStringInfo(&sql, "ALTER TABLE %s ", LockedName(c, relid));
		forboth(rel, c->w_rel, att, c->w_att)
		{
			if (lfirst_oid(rel) != relid)
				continue;
			appendStringInfo(&sql, "%sALTER COLUMN %s TYPE bigint", sep,
							 quote_identifier(static_cast<const char *>(lfirst(att))));
			sep = ", ";
		}
		if (relid == c->table)
			appendStringInfo(&sql, "%sALTER COLUMN %s SET DEFAULT %s()", sep,
							 quote_identifier(c->column), nextval);
		RunStatement(c, relid, sql.data);
		forboth(rel, c->w_rel, att, c->w_att)
		{
			if (lfirst_oid(rel) == relid &&
				!IsPlainColumn(relid, static_cast<const char *>(lfirst(att)), INT8OID))
				RefuseRenamed(c, relid, sql.data, "left a column other than bigint");
		}
		if (relid == c->table && !DefaultIsNextval(c))
			RefuseRenamed(c, relid, sql.data,
						  "left a default other than the extension's snowflake_nextval()");
	}
}

/* The serial's sequence, dropped when the column owned it alone. */
void
DropSequence(Conversion *c)
{
	Oid types[1] = {OIDOID};
	Datum values[1] = {ObjectIdGetDatum(c->seq_oid)};
	const char *relname = nullptr;
	const char *kept = nullptr;

	if (!OidIsValid(c->seq_oid))
		return;
	const char *seq_name = QualifiedName(c->seq_oid);

	if (!c->seq_owned)
		kept = "the column does not own it";
	else if (CatalogQuery(kSequenceUsersQuery, 1, types, values) > 0)
		kept = "other objects use it";
	else if (RelOwner(c->seq_oid, &relname) != c->caller)
		kept = "the calling role does not own it";
	if (kept != nullptr)
	{
		c->key_action = psprintf("%s; sequence %s kept: %s", c->key_action, seq_name, kept);
		return;
	}
	/* Locked by OID, so that it cannot be renamed or moved before the
	 * statement, and its schema's row, so that the schema cannot. */
	LockRelationOid(c->seq_oid, AccessExclusiveLock);
	seq_name = LockedName(c, c->seq_oid);
	const char *sql = psprintf("DROP SEQUENCE %s", seq_name);

	RunStatement(c, c->seq_oid, sql);
	if (SearchSysCacheExists1(RELOID, ObjectIdGetDatum(c->seq_oid)))
		RefuseRenamed(c, c->seq_oid, sql, "left the sequence in place");
	c->key_action = psprintf("%s; sequence %s dropped", c->key_action, seq_name);
}

/* One row per column: table, column, old type, what changed. */
void
Report(FunctionCallInfo fcinfo, const Conversion *c)
{
	ReturnSetInfo *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
	ListCell *rel, *att, *type, *action;
	List *actions = lcons(psprintf("DEFAULT snowflake_nextval() replaces %s",
								   c->key_action),
						  c->r_action);

	forfour(rel, c->r_rel, att, c->r_att, type, c->r_type, action, actions)
	{
		Datum values[4] = {ObjectIdGetDatum(lfirst_oid(rel)),
						   DirectFunctionCall1(namein,
											   CStringGetDatum(
												   static_cast<const char *>(lfirst(att)))),
						   ObjectIdGetDatum(lfirst_oid(type)),
						   CStringGetTextDatum(static_cast<const char *>(lfirst(action)))};
		bool nulls[4] = {false, false, false, false};

		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

} /* namespace */

extern "C"
{
PG_FUNCTION_INFO_V1(snowflake_convert_column);
}

/* A serial or identity key, and the columns referencing it, to bigint. */
extern "C" Datum
snowflake_convert_column(PG_FUNCTION_ARGS)
{
	Conversion *c = static_cast<Conversion *>(palloc0(sizeof(Conversion)));

	c->function = "snowflake_convert_column";
	c->table = PG_GETARG_OID(0);
	c->column = pstrdup(NameStr(*PG_GETARG_NAME(1)));
	c->caller = GetUserId();
	InitMaterializedSRF(fcinfo, 0);

	/* At REPEATABLE READ the checks would read the catalog as it was
	 * before the locks, and miss what was committed during the wait. */
	if (XactIsoLevel != XACT_READ_COMMITTED)
		Refuse(
			ERRCODE_INVALID_TRANSACTION_STATE,
			psprintf("%s() must run at isolation level READ COMMITTED", c->function),
			psprintf(
				"This transaction runs at %s, so its checks would read the catalog as it was before the conversion locked the tables.",
				XactIsoLevel == XACT_SERIALIZABLE ? "SERIALIZABLE" : "REPEATABLE READ"),
			"Run it in a READ COMMITTED transaction, the default.");
	FindExtensionObjects(c, fcinfo->flinfo->fn_oid);

	char relkind = get_rel_relkind(c->table);

	if (relkind == '\0')
		Refuse(ERRCODE_UNDEFINED_TABLE,
			   psprintf("relation with OID %u does not exist", c->table), nullptr,
			   "Pass a table that exists.");
	c->rel_name = get_rel_name(c->table);
	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
		Refuse(ERRCODE_WRONG_OBJECT_TYPE, psprintf("\"%s\" is not a table", c->rel_name),
			   nullptr,
			   relkind == RELKIND_SEQUENCE ?
				   "Pass the table and its serial or identity column, not the sequence." :
				   psprintf("%s() converts a column of a table or partitioned table.",
							c->function));

	/* The catalog queries see pg_catalog only (pg_temp last). */
	int nest = NewGUCNestLevel();

	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "snowflake: SPI_connect failed");

	/* Lock the key's table, then each table found to change or to be at
	 * the other end of a changing foreign key, until none turns up: the
	 * owner is checked before each lock (so as not to wait on another
	 * role's table) and again after it. */
	List *new_rels = list_make1_oid(c->table);

	while (new_rels != NIL)
	{
		CheckOwners(c, new_rels);
		LockByOid(c, new_rels);
		CheckOwners(c, new_rels);
		c->locked = list_concat(c->locked, new_rels);
		if (c->key_attnum == 0)
			CheckKey(c);
		CollectReferences(c);
		new_rels = TablesToLock(c);
	}
	CheckBlockers(c);
	CheckExistingValues(c);
	ApplyChanges(c);
	DropSequence(c);
	Report(fcinfo, c);

	SPI_finish();
	AtEOXact_GUC(true, nest);
	return (Datum) 0;
}
