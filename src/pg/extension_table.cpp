/*
 * extension_table.cpp
 *	  Finding the extension's tables by membership, checking their shape,
 *	  and reading and writing them by OID (see extension_table.hpp).
 *
 * The writes follow logical replication's apply worker (worker.c), with
 * the executor helpers of execReplication.c.
 */
extern "C"
{
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/pg_class.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_extension.h"
#include "commands/extension.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "nodes/bitmapset.h"
#include "nodes/pg_list.h"
#include "parser/parse_relation.h" /* addRTEPermissionInfo (16 on) */
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/reltrigger.h"
#include "utils/snapmgr.h"
}

#include "pg/extension_table.hpp"

namespace {

/*
 * The member relation "relname" of "extension", from pg_depend's entries
 * that point at the extension; InvalidOid if there is none.  Only the
 * relation's own name is compared: no schema takes part.
 */
Oid
MemberRelation(Oid extension, const char *relname)
{
	Relation depend = table_open(DependRelationId, AccessShareLock);
	ScanKeyData keys[2];
	Oid found = InvalidOid;

	ScanKeyInit(&keys[0], Anum_pg_depend_refclassid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(ExtensionRelationId));
	ScanKeyInit(&keys[1], Anum_pg_depend_refobjid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(extension));

	SysScanDesc scan = systable_beginscan(depend, DependReferenceIndexId, true, nullptr, 2,
										  keys);
	HeapTuple tuple;

	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		Form_pg_depend entry = reinterpret_cast<Form_pg_depend>(GETSTRUCT(tuple));

		if (entry->classid != RelationRelationId || entry->objsubid != 0 ||
			entry->deptype != DEPENDENCY_EXTENSION)
			continue;

		char *name = get_rel_name(entry->objid);

		if (name == nullptr || strcmp(name, relname) != 0)
			continue;
		if (OidIsValid(found))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("the snowflake extension has more than one member table named "
							"\"%s\"",
							relname)));
		found = entry->objid;
	}
	systable_endscan(scan);
	table_close(depend, AccessShareLock);
	return found;
}

[[noreturn]] void
ReportWrongShape(Relation rel, const char *problem)
{
	ereport(
		ERROR,
		(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
		 errmsg(
			 "table \"%s\" of the snowflake extension is not as the extension created it",
			 RelationGetRelationName(rel)),
		 errdetail("%s", problem),
		 errhint("Restore the table, or drop and re-create the extension.")));
}

/* ERROR unless "rel" is the ordinary table with exactly the shape's columns. */
void
CheckShape(ExtensionTable *table)
{
	Relation rel = table->rel;
	const ExtensionTableShape *shape = table->shape;
	TupleDesc desc = RelationGetDescr(rel);
	int live_columns = 0;

	if (rel->rd_rel->relkind != RELKIND_RELATION)
		ReportWrongShape(rel, "It is not an ordinary table.");
	for (int i = 0; i < desc->natts; i++)
		if (!TupleDescAttr(desc, i)->attisdropped)
			live_columns++;
	if (live_columns != shape->column_count)
		ReportWrongShape(rel,
						 psprintf("It has %d columns, not %d.", live_columns,
								  shape->column_count));

	for (int c = 0; c < shape->column_count; c++)
	{
		const ExtensionColumn *column = &shape->columns[c];
		Form_pg_attribute attribute = nullptr;

		for (int i = 0; i < desc->natts && attribute == nullptr; i++)
		{
			Form_pg_attribute candidate = TupleDescAttr(desc, i);

			if (!candidate->attisdropped &&
				strcmp(NameStr(candidate->attname), column->name) == 0)
				attribute = candidate;
		}
		if (attribute == nullptr || attribute->atttypid != column->type ||
			!attribute->attnotnull)
			ReportWrongShape(rel,
							 psprintf("Column \"%s\" is missing, of another type, or "
									  "nullable.",
									  column->name));
		table->attnums[c] = attribute->attnum;
	}

	table->primary_key = InvalidOid;
	if (shape->key_count == 0)
		return;
#if PG_VERSION_NUM >= 180000
	table->primary_key = RelationGetPrimaryKeyIndex(rel, false);
#else
	table->primary_key = RelationGetPrimaryKeyIndex(rel);
#endif

	bool key_matches = OidIsValid(table->primary_key);

	if (key_matches)
	{
		Relation index = index_open(table->primary_key, AccessShareLock);

		key_matches = IndexRelationGetNumberOfKeyAttributes(index) == shape->key_count;
		for (int c = 0; key_matches && c < shape->key_count; c++)
			key_matches = index->rd_index->indkey.values[c] == table->attnums[c];
		index_close(index, AccessShareLock);
	}
	if (!key_matches)
		ReportWrongShape(rel, "Its primary key is not the one the extension created.");
}

/* Stores the first "count" shape columns of "values" in "slot", the rest null. */
void
StoreShapeValues(TupleTableSlot *slot, const ExtensionTable *table, int count,
				 const Datum *values)
{
	ExecClearTuple(slot);
	for (int i = 0; i < slot->tts_tupleDescriptor->natts; i++)
	{
		slot->tts_values[i] = (Datum) 0;
		slot->tts_isnull[i] = true;
	}
	for (int c = 0; c < count; c++)
	{
		slot->tts_values[table->attnums[c] - 1] = values[c];
		slot->tts_isnull[table->attnums[c] - 1] = false;
	}
	ExecStoreVirtualTuple(slot);
}

/* The shape's columns of a slot; NOT NULL, as CheckShape made sure. */
void
GetShapeValues(TupleTableSlot *slot, const ExtensionTable *table, Datum *values)
{
	slot_getallattrs(slot);
	for (int c = 0; c < table->shape->column_count; c++)
	{
		AttrNumber attnum = table->attnums[c];

		if (slot->tts_isnull[attnum - 1])
			elog(ERROR, "null in column \"%s\" of table \"%s\"",
				 table->shape->columns[c].name, RelationGetRelationName(table->rel));
		values[c] = slot->tts_values[attnum - 1];
	}
}

/*
 * Callers write with the table owner's rights, but a deferred trigger
 * fires at commit with whoever commits then (the caller of
 * snowflake_nextval(), or the registry worker's superuser), so a table
 * with a deferrable trigger is not written at all.
 */
void
RefuseDeferrableTriggers(Relation rel)
{
	const TriggerDesc *triggers = rel->trigdesc;

	for (int i = 0; triggers != nullptr && i < triggers->numtriggers; i++)
		if (triggers->triggers[i].tgdeferrable)
			ereport(
				ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table \"%s\" of the snowflake extension has a deferrable trigger, "
						"\"%s\"",
						RelationGetRelationName(rel), triggers->triggers[i].tgname),
				 errdetail("The extension writes the table with its owner's rights; a "
						   "deferred trigger would fire at commit with other rights."),
				 errhint("Drop the trigger, or re-create it not deferrable.")));
}

} /* namespace */

Oid
SnowflakeExtensionOid(void)
{
	return get_extension_oid("snowflake", true);
}

bool
OpenExtensionTable(Oid extension, const ExtensionTableShape *shape, LOCKMODE lockmode,
				   ExtensionTable *table)
{
	Assert(shape->column_count <= kMaxExtensionTableColumns);
	if (!OidIsValid(extension))
		return false;

	Oid relid = MemberRelation(extension, shape->relname);

	if (!OidIsValid(relid))
		return false;

	/*
	 * Locked only now: if it was dropped or renamed meanwhile, or its OID
	 * reused, it is no longer this member, and counts as absent.
	 */
	Relation rel = try_table_open(relid, lockmode);

	if (rel == nullptr)
		return false;
	if (strcmp(RelationGetRelationName(rel), shape->relname) != 0 ||
		getExtensionOfObject(RelationRelationId, relid) != extension)
	{
		table_close(rel, lockmode);
		return false;
	}
	table->rel = rel;
	table->shape = shape;
	CheckShape(table);
	return true;
}

void
CloseExtensionTable(ExtensionTable *table)
{
	table_close(table->rel, NoLock);
	table->rel = nullptr;
}

void
BeginExtensionTableScan(const ExtensionTable *table, Snapshot snapshot,
						ExtensionTableScan *scan)
{
	scan->table = table;
	scan->snapshot = RegisterSnapshot(snapshot);
	scan->slot = table_slot_create(table->rel, nullptr);
#if PG_VERSION_NUM >= 190000
	/* 19 added the caller's scan flags; a plain scan sets none. */
	scan->scan = table_beginscan(table->rel, scan->snapshot, 0, nullptr, 0);
#else
	scan->scan = table_beginscan(table->rel, scan->snapshot, 0, nullptr);
#endif
}

bool
NextExtensionTableRow(ExtensionTableScan *scan, Datum *values)
{
	if (!table_scan_getnextslot(scan->scan, ForwardScanDirection, scan->slot))
		return false;
	GetShapeValues(scan->slot, scan->table, values);
	return true;
}

void
EndExtensionTableScan(ExtensionTableScan *scan)
{
	table_endscan(scan->scan);
	ExecDropSingleTupleTableSlot(scan->slot);
	UnregisterSnapshot(scan->snapshot);
}

void
BeginExtensionTableWrite(const ExtensionTable *table, ExtensionTableWrite *write)
{
	Relation rel = table->rel;

	RefuseDeferrableTriggers(rel);

	EState *estate = CreateExecutorState();
	RangeTblEntry *rte = makeNode(RangeTblEntry);

	rte->rtekind = RTE_RELATION;
	rte->relid = RelationGetRelid(rel);
	rte->relkind = rel->rd_rel->relkind;
	rte->rellockmode = RowExclusiveLock;
#if PG_VERSION_NUM >= 160000
	List *perminfos = NIL;

	addRTEPermissionInfo(&perminfos, rte);
#endif
#if PG_VERSION_NUM >= 180000
	ExecInitRangeTable(estate, list_make1(rte), perminfos, bms_make_singleton(1));
#elif PG_VERSION_NUM >= 160000
	ExecInitRangeTable(estate, list_make1(rte), perminfos);
#else
	ExecInitRangeTable(estate, list_make1(rte));
#endif

	ResultRelInfo *result = makeNode(ResultRelInfo);

	InitResultRelInfo(result, rel, 1, nullptr, 0);
	/* Enough for ExecGetTriggerResultRel() to find it, as in worker.c. */
	estate->es_opened_result_relations = lappend(estate->es_opened_result_relations,
												 result);
	estate->es_output_cid = GetCurrentCommandId(true);
	ExecOpenIndices(result, false);
#if PG_VERSION_NUM >= 170000
	EvalPlanQualInit(&write->epq, estate, nullptr, NIL, -1, NIL);
#else
	EvalPlanQualInit(&write->epq, estate, nullptr, NIL, -1);
#endif
	AfterTriggerBeginQuery();

	write->table = table;
	write->estate = estate;
	write->result = result;
	write->row = ExecInitExtraTupleSlot(estate, RelationGetDescr(rel), &TTSOpsVirtual);
	write->found = table_slot_create(rel, &estate->es_tupleTable);
}

void
InsertExtensionTableRow(ExtensionTableWrite *write, const Datum *values)
{
	StoreShapeValues(write->row, write->table, write->table->shape->column_count, values);
	ExecSimpleRelationInsert(write->result, write->estate, write->row);
}

bool
DeleteExtensionTableRowByKey(ExtensionTableWrite *write, const Datum *values,
							 Datum *old_values)
{
	const ExtensionTable *table = write->table;
	TupleTableSlot *key = write->row;

	Assert(OidIsValid(table->primary_key));
	StoreShapeValues(key, table, table->shape->key_count, values);
	if (!RelationFindReplTupleByIndex(table->rel, table->primary_key, LockTupleExclusive,
									  key, write->found))
		return false;
	GetShapeValues(write->found, table, old_values);
	EvalPlanQualSetSlot(&write->epq, write->found);
	ExecSimpleRelationDelete(write->result, write->estate, &write->epq, write->found);
	return true;
}

void
EndExtensionTableWrite(ExtensionTableWrite *write)
{
	ExecCloseIndices(write->result);
	EvalPlanQualEnd(&write->epq);
	AfterTriggerEndQuery(write->estate);
	ExecResetTupleTable(write->estate->es_tupleTable, false);
	FreeExecutorState(write->estate);
	write->estate = nullptr;
}
