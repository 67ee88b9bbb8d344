/*
 * lease_expansion.cpp
 *	  Refusing a column selected from a call of snowflake_lease_worker().
 *
 * PostgreSQL evaluates (f()).* once per column: ExpandRowReference
 * (parse_target.c) copies the call into each column's FieldSelect, and
 * each evaluation is a grant, so the row would carry the worker id of one
 * lease beside the token of another.  A grant cannot tell such copies from
 * separate calls without the executor's state, so the query is refused
 * before it runs, wherever a FieldSelect's argument calls the function
 * (subqueries, CTEs, sublinks, the query of EXPLAIN, CREATE TABLE AS and
 * DECLARE CURSOR).  A call in FROM, LATERAL, the select list or a PL/pgSQL
 * assignment is one evaluation, one lease.
 *
 * It runs after parse analysis (so CREATE VIEW and CREATE FUNCTION fail at
 * once) and in the planner, for what the rewriter adds and BEGIN ATOMIC
 * bodies; a column's or a domain's default is checked when it is stored,
 * as ALTER TABLE ... ADD COLUMN and COPY FROM evaluate it without a plan.
 * The function is known by its entry point, through the catalog cache by
 * OID, not by its name.
 */
extern "C"
{
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"	/* GETSTRUCT */
#include "access/table.h"
#include "catalog/pg_attrdef.h"
#include "catalog/pg_type.h"
#include "catalog/pg_language_d.h"	/* ClanguageId */
#include "catalog/pg_proc.h"
#include "catalog/pg_type_d.h"	/* RECORDOID */
#include "fmgr.h"				/* load_external_function */
#include "nodes/nodeFuncs.h"
#include "utils/builtins.h"		/* TextDatumGetCString */
#include "utils/fmgroids.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"		/* SnapshotSelf */
#include "utils/syscache.h"
}

#include "pg/leases/lease_expansion.hpp"
#include "pg/tree_walkers.hpp"

/* In lease_functions.cpp. */
extern "C" PGDLLEXPORT Datum snowflake_lease_worker(PG_FUNCTION_ARGS);

namespace {

constexpr const char *kGrantSymbol = "snowflake_lease_worker";

/* Whether the function "funcid" is this library's snowflake_lease_worker(). */
bool
GrantsLeases(Oid funcid)
{
	HeapTuple	tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(funcid));

	if (!HeapTupleIsValid(tuple))
		return false;

	bool		grants = false;
	bool		no_symbol;
	bool		no_library;
	Datum		symbol = SysCacheGetAttr(PROCOID, tuple, Anum_pg_proc_prosrc, &no_symbol);
	Datum		library = SysCacheGetAttr(PROCOID, tuple, Anum_pg_proc_probin, &no_library);

	if (reinterpret_cast<Form_pg_proc>(GETSTRUCT(tuple))->prolang == ClanguageId &&
		!no_symbol && !no_library && strcmp(TextDatumGetCString(symbol), kGrantSymbol) == 0)
	{
		void	   *entry = load_external_function(TextDatumGetCString(library), kGrantSymbol,
												   false, nullptr);

		grants = reinterpret_cast<PGFunction>(entry) == snowflake_lease_worker;
	}
	ReleaseSysCache(tuple);
	return grants;
}

/* Whether evaluating "node" calls snowflake_lease_worker(); "context" gets the call. */
bool
CallsLeaseWorkerWalker(Node *node, void *context)
{
	if (node == nullptr)
		return false;
	if (IsA(node, Query))
		return query_tree_walker(castNode(Query, node), AS_WALKER(CallsLeaseWorkerWalker),
								 context, 0);
	if (IsA(node, FuncExpr))
	{
		FuncExpr   *call = castNode(FuncExpr, node);

		/* Its result is a record: no catalog lookup for the other calls. */
		if (call->funcresulttype == RECORDOID && GrantsLeases(call->funcid))
		{
			*static_cast<FuncExpr **>(context) = call;
			return true;
		}
	}
	return expression_tree_walker(node, AS_WALKER(CallsLeaseWorkerWalker), context);
}

void
ReportFieldSelection(ParseState *pstate, const FuncExpr *call)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot select a column of snowflake_lease_worker()'s result"),
			 errdetail("PostgreSQL evaluates the call once for each column selected from "
					   "it, and each evaluation takes a lease of its own: a row would "
					   "carry the worker id of one lease and the token of another."),
			 errhint("Call it in FROM or LATERAL, as in SELECT * FROM "
					 "snowflake_lease_worker(...), or assign it to a record variable."),
			 pstate != nullptr ? parser_errposition(pstate, call->location) : 0));
}

/* The analyzed statement a utility command holds, or nullptr. */
Node *
StatementOfUtility(Node *utility)
{
	if (IsA(utility, ExplainStmt))
		return castNode(ExplainStmt, utility)->query;
	if (IsA(utility, CreateTableAsStmt))
		return castNode(CreateTableAsStmt, utility)->query;
	if (IsA(utility, DeclareCursorStmt))
		return castNode(DeclareCursorStmt, utility)->query;
	if (IsA(utility, CallStmt))
		return reinterpret_cast<Node *>(castNode(CallStmt, utility)->funcexpr);
	return nullptr;
}

/* Raises the refusal at the first FieldSelect of a call; "context" is the ParseState. */
bool
FieldSelectionWalker(Node *node, void *context)
{
	if (node == nullptr)
		return false;
	if (IsA(node, Query))
	{
		Query	   *query = castNode(Query, node);

		if (query->utilityStmt != nullptr)
			(void) FieldSelectionWalker(StatementOfUtility(query->utilityStmt), context);
		return query_tree_walker(query, AS_WALKER(FieldSelectionWalker), context, 0);
	}
	if (IsA(node, FieldSelect))
	{
		Node	   *arg = reinterpret_cast<Node *>(castNode(FieldSelect, node)->arg);
		FuncExpr   *call = nullptr;

		if (CallsLeaseWorkerWalker(arg, &call))
			ReportFieldSelection(static_cast<ParseState *>(context), call);
	}
	return expression_tree_walker(node, AS_WALKER(FieldSelectionWalker), context);
}

/* Walks the expression in column "column" of the row found (SnapshotSelf: a new one). */
void
RefuseInStoredExpression(Oid catalog, Oid index, ScanKeyData *keys, int nkeys,
						 AttrNumber column)
{
	Relation rel = table_open(catalog, AccessShareLock);
	SysScanDesc scan = systable_beginscan(rel, index, true, SnapshotSelf, nkeys, keys);
	HeapTuple tuple = systable_getnext(scan);
	Node *expr = nullptr;

	if (HeapTupleIsValid(tuple))
	{
		bool isnull;
		Datum stored = heap_getattr(tuple, column, RelationGetDescr(rel), &isnull);

		if (!isnull)
			expr = static_cast<Node *>(stringToNode(TextDatumGetCString(stored)));
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	if (expr != nullptr)
		(void) FieldSelectionWalker(expr, nullptr);
}

} /* namespace */

void
RefuseLeaseFieldSelection(ParseState *pstate, Query *query)
{
	(void) FieldSelectionWalker(reinterpret_cast<Node *>(query), pstate);
}

void
RefuseLeaseFieldSelectionInDefault(Oid relid, int attnum)
{
	ScanKeyData keys[2];

	ScanKeyInit(&keys[0], Anum_pg_attrdef_adrelid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	ScanKeyInit(&keys[1], Anum_pg_attrdef_adnum, BTEqualStrategyNumber, F_INT2EQ,
				Int16GetDatum(attnum));
	RefuseInStoredExpression(AttrDefaultRelationId, AttrDefaultIndexId, keys, 2,
							 Anum_pg_attrdef_adbin);
}

void
RefuseLeaseFieldSelectionInDomainDefault(Oid typid)
{
	ScanKeyData keys[1];

	ScanKeyInit(&keys[0], Anum_pg_type_oid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(typid));
	RefuseInStoredExpression(TypeRelationId, TypeOidIndexId, keys, 1,
							 Anum_pg_type_typdefaultbin);
}
