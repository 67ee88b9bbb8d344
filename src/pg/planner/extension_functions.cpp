/*
 * extension_functions.cpp
 *	  Finding the extension's functions for the planner hook, once per
 *	  backend and again after any function changes.
 *
 * The hook runs for every query of every database, so the answer, even
 * "not installed here", is cached.  A function found by name counts only if
 * it is a member of the extension: a function another role created in the
 * extension's schema must never be called from someone else's query.
 */
extern "C"
{
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/dependency.h"	/* getExtensionOfObject */
#include "catalog/indexing.h"
#include "catalog/pg_am.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_opfamily.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"	/* GetDefaultOpClass */
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
}

#include "pg/extension_table.hpp"
#include "pg/planner/extension_functions.hpp"

namespace {

enum class CacheState
{
	kUnknown,
	kAbsent,
	kPresent,
};

CacheState cache_state = CacheState::kUnknown;
ExtensionFunctions cached;
/* Counts invalidations, so one that arrives during a lookup is not lost. */
uint64		invalidations = 0;
bool		callback_registered = false;

void
ForgetFunctions(Datum arg, int cacheid, uint32 hashvalue)
{
	(void) arg;
	(void) cacheid;
	(void) hashvalue;
	cache_state = CacheState::kUnknown;
	invalidations++;
}

/* pg_extension.extnamespace of "extension" (PostgreSQL 15 exports no getter). */
Oid
ExtensionSchema(Oid extension)
{
	Relation	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyData key;
	Oid			schema = InvalidOid;

	ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(extension));

	SysScanDesc scan = systable_beginscan(rel, ExtensionOidIndexId, true, nullptr, 1, &key);
	HeapTuple	tuple = systable_getnext(scan);

	if (HeapTupleIsValid(tuple))
		schema = reinterpret_cast<Form_pg_extension>(GETSTRUCT(tuple))->extnamespace;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return schema;
}

/* The member function "name"(args) of "extension", or InvalidOid. */
Oid
MemberFunction(Oid extension, Oid schema, const char *name, Oid arg0, Oid arg1, int nargs)
{
	Oid			args[2] = {arg0, arg1};
	oidvector  *signature = buildoidvector(args, nargs);
	Oid			function = GetSysCacheOid3(PROCNAMEARGSNSP, Anum_pg_proc_oid, CStringGetDatum(name),
								   PointerGetDatum(signature), ObjectIdGetDatum(schema));

	if (!OidIsValid(function) ||
		getExtensionOfObject(ProcedureRelationId, function) != extension)
		return InvalidOid;
	return function;
}

bool
LookUp(ExtensionFunctions *out)
{
	Oid extension = SnowflakeExtensionOid();

	if (!OidIsValid(extension))
		return false;

	Oid			schema = ExtensionSchema(extension);
	static const char *const kRecheckNames[kStrategyCount + 1] = {
		nullptr,
		"snowflake_timestamp_lt",
		"snowflake_timestamp_le",
		"snowflake_timestamp_eq",
		"snowflake_timestamp_ge",
		"snowflake_timestamp_gt",
	};

	out->timestamp = MemberFunction(extension, schema, "snowflake_timestamp", INT8OID,
									InvalidOid, 1);
	out->decode = MemberFunction(extension, schema, "snowflake_decode", INT8OID, InvalidOid,
								 1);
	out->lower_id = MemberFunction(extension, schema, "snowflake_timestamp_lower_id",
								   TIMESTAMPTZOID, BOOLOID, 2);
	out->upper_id = MemberFunction(extension, schema, "snowflake_timestamp_upper_id",
								   TIMESTAMPTZOID, BOOLOID, 2);
	if (!OidIsValid(out->timestamp) || !OidIsValid(out->decode) ||
		!OidIsValid(out->lower_id) || !OidIsValid(out->upper_id))
		return false;
	out->recheck[0] = InvalidOid;
	for (int strategy = 1; strategy <= kStrategyCount; strategy++)
	{
		out->recheck[strategy] = MemberFunction(extension, schema, kRecheckNames[strategy],
												INT8OID, TIMESTAMPTZOID, 2);
		if (!OidIsValid(out->recheck[strategy]))
			return false;
	}

	out->timestamptz_family = get_opclass_family(
		GetDefaultOpClass(TIMESTAMPTZOID, BTREE_AM_OID));
	out->int8_ge = get_opfamily_member(INTEGER_BTREE_FAM_OID, INT8OID, INT8OID,
									   BTGreaterEqualStrategyNumber);
	out->int8_le = get_opfamily_member(INTEGER_BTREE_FAM_OID, INT8OID, INT8OID,
									   BTLessEqualStrategyNumber);
	return OidIsValid(out->timestamptz_family) && OidIsValid(out->int8_ge) &&
		OidIsValid(out->int8_le);
}

}							/* namespace */

bool
ExtensionFunctionsKnown(void)
{
	return cache_state != CacheState::kUnknown;
}

const ExtensionFunctions *
CurrentExtensionFunctions(void)
{
	if (!callback_registered)
	{
		/* CREATE, DROP, ALTER EXTENSION and SET SCHEMA all change pg_proc. */
		CacheRegisterSyscacheCallback(PROCOID, ForgetFunctions, (Datum) 0);
		callback_registered = true;
	}
	if (cache_state == CacheState::kUnknown)
	{
		uint64		before = invalidations;
		bool		found = LookUp(&cached);

		if (invalidations != before)
			return found ? &cached : nullptr;	/* good for this query only */
		cache_state = found ? CacheState::kPresent : CacheState::kAbsent;
	}
	return cache_state == CacheState::kPresent ? &cached : nullptr;
}
