/*
 * old_versions.cpp
 *	  What library 1.5 does about the SQL objects of older versions of the
 *	  extension.
 *
 * ALTER EXTENSION snowflake UPDATE runs in one database at a time, so after
 * the library is upgraded a database may still hold the SQL of an older
 * version.  Version 1.4's lease functions were SECURITY DEFINER PL/pgSQL
 * that called their helpers by schema name: the owner of the extension's
 * schema could plant look-alikes and run them as the superuser.  Under
 * this library:
 *	- every SECURITY DEFINER function of the extension is refused before
 *	  its body runs (the function manager hook below; 1.5 has none);
 *	- 1.4's C entry point snowflake_lease_context() refuses too (with the
 *	  rest of 1.4's afterlife, in leases/lease_v14.cpp);
 *	- a session's first ID warns that the database is at an older version.
 * None of this runs a query or resolves a schema-qualified name: the
 * catalogs are read by OID, and the extension by its name, which is not
 * in any schema.
 */
extern "C"
{
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/dependency.h" /* getExtensionOfObject */
#include "catalog/pg_extension.h"
#include "catalog/pg_proc.h"
#include "commands/dbcommands.h" /* get_database_name */
#include "commands/extension.h"
#include "fmgr.h"
#include "miscadmin.h"      /* MyDatabaseId */
#include "utils/builtins.h" /* text_to_cstring */
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h" /* get_func_name */
#include "utils/rel.h"
#include "utils/syscache.h"
}

#include "core/extension_version.hpp"
#include "pg/extension_table.hpp"
#include "pg/old_versions.hpp"

#ifndef SNOWFLAKE_LIBRARY_VERSION
#error \
	"the Makefile defines SNOWFLAKE_LIBRARY_VERSION (snowflake.control's default_version)"
#endif

namespace {

fmgr_hook_type prev_fmgr_hook = nullptr;

/* Per backend: whether a function is refused, by OID. */
struct DefinerEntry
{
	Oid function; /* the hash key */
	bool refused;
};

HTAB *definer_cache = nullptr;
bool definer_cache_stale = false;
/* Counts invalidations, so one that arrives during a lookup is not lost. */
uint64 invalidations = 0;

/*
 * CREATE OR REPLACE, ALTER FUNCTION and ALTER EXTENSION UPDATE change
 * pg_proc.  (ALTER EXTENSION ADD or DROP FUNCTION changes only pg_depend:
 * a backend that called the function before keeps its answer until pg_proc
 * changes.  Only a superuser can do that, and no update script does.)
 */
void
ForgetDefiners(Datum arg, int cacheid, uint32 hashvalue)
{
	(void) arg;
	(void) cacheid;
	(void) hashvalue;
	definer_cache_stale = true;
	invalidations++;
}

/* pg_extension.extversion of "extension" (palloc'd), or nullptr. */
char *
ExtensionVersion(Oid extension)
{
	Relation rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyData key;
	char *version = nullptr;

	ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(extension));

	SysScanDesc scan = systable_beginscan(rel, ExtensionOidIndexId, true, nullptr, 1, &key);
	HeapTuple tuple = systable_getnext(scan);

	if (HeapTupleIsValid(tuple))
	{
		bool isnull;
		Datum datum = heap_getattr(tuple, Anum_pg_extension_extversion,
								   RelationGetDescr(rel), &isnull);

		if (!isnull)
			version = text_to_cstring(DatumGetTextPP(datum));
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return version;
}

/* Whether "function" is SECURITY DEFINER and a member of the extension. */
bool
IsDefinerOfExtension(Oid function)
{
	HeapTuple tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(function));

	if (!HeapTupleIsValid(tuple))
		return false;

	bool definer = reinterpret_cast<Form_pg_proc>(GETSTRUCT(tuple))->prosecdef;

	ReleaseSysCache(tuple);
	if (!definer)
		return false;

	Oid extension = getExtensionOfObject(ProcedureRelationId, function);

	return OidIsValid(extension) && extension == SnowflakeExtensionOid();
}

/* IsDefinerOfExtension(), cached until pg_proc changes. */
bool
IsRefusedDefiner(Oid function)
{
	if (definer_cache == nullptr || definer_cache_stale)
	{
		HASHCTL ctl;

		if (definer_cache == nullptr)
			CacheRegisterSyscacheCallback(PROCOID, ForgetDefiners, (Datum) 0);
		else
			hash_destroy(definer_cache);
		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(DefinerEntry);
		definer_cache = hash_create("snowflake definer functions", 64, &ctl,
									HASH_ELEM | HASH_BLOBS);
		definer_cache_stale = false;
	}

	auto *entry = static_cast<DefinerEntry *>(
		hash_search(definer_cache, &function, HASH_FIND, nullptr));

	if (entry != nullptr)
		return entry->refused;

	uint64 before = invalidations;
	bool refused = IsDefinerOfExtension(function);

	/* Keep the answer only if pg_proc did not change while it was sought. */
	if (invalidations == before)
	{
		entry = static_cast<DefinerEntry *>(
			hash_search(definer_cache, &function, HASH_ENTER, nullptr));
		entry->refused = refused;
	}
	return refused;
}

[[noreturn]] void
ReportRefusedDefiner(Oid function)
{
	Oid extension = SnowflakeExtensionOid();
	const char *version = OidIsValid(extension) ? ExtensionVersion(extension) : nullptr;
	const char *database = get_database_name(MyDatabaseId);
	const char *name = get_func_name(function);

	ereport(
		ERROR,
		(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
		 errmsg("snowflake %s's SECURITY DEFINER functions are disabled under library %s",
				version != nullptr ? version : "?", SNOWFLAKE_LIBRARY_VERSION),
		 errdetail("Database \"%s\" still has the SQL functions of snowflake %s. "
				   "%s() runs with its owner's rights and calls other functions by "
				   "schema name, so the owner of the extension's schema could run "
				   "code with those rights.",
				   database, version != nullptr ? version : "?",
				   name != nullptr ? name : "?"),
		 errhint("Run ALTER EXTENSION snowflake UPDATE in database \"%s\".", database)));
	pg_unreachable();
}

/*
 * Runs at the start of every SECURITY DEFINER call (and of functions with
 * SET clauses), already as the function's owner: refuses the extension's
 * before its body runs, so none of its name lookups happens.  The function
 * manager routes every SECURITY DEFINER function through fmgr_hook
 * (fmgr_security_definer), so no needs_fmgr_hook is installed: other
 * functions pay nothing.
 */
void
RefuseOldDefiners(FmgrHookEventType event, FmgrInfo *flinfo, Datum *arg)
{
	if (event == FHET_START && IsRefusedDefiner(flinfo->fn_oid))
		ReportRefusedDefiner(flinfo->fn_oid);
	if (prev_fmgr_hook != nullptr)
		prev_fmgr_hook(event, flinfo, arg);
}

} /* namespace */

const char *
LibraryVersion(void)
{
	return SNOWFLAKE_LIBRARY_VERSION;
}

void
InstallOldVersionGuard(void)
{
	prev_fmgr_hook = fmgr_hook;
	fmgr_hook = RefuseOldDefiners;
}

const char *
OutdatedExtensionVersion(void)
{
	Oid extension = SnowflakeExtensionOid();

	if (!OidIsValid(extension))
		return nullptr;

	char *version = ExtensionVersion(extension);

	if (version == nullptr ||
		!snowflake::IsOlderVersion(version, SNOWFLAKE_LIBRARY_VERSION))
		return nullptr;
	return version;
}

bool
WarnOnceIfExtensionOutdated(void)
{
	static bool checked = false;
	static bool outdated = false;

	if (checked)
		return outdated;
	checked = true;

	const char *version = OutdatedExtensionVersion();

	if (version == nullptr)
		return false;
	outdated = true;

	const char *database = get_database_name(MyDatabaseId);

	ereport(
		WARNING,
		(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
		 errmsg("snowflake extension in database \"%s\" is at version %s, older than "
				"library version %s",
				database, version, SNOWFLAKE_LIBRARY_VERSION),
		 strcmp(version, "1.4") == 0 ?
			 errdetail("The database is exposed until it is updated: it keeps version "
					   "1.4's SECURITY DEFINER functions, which the owner of the "
					   "extension's schema can turn against the superuser. Library %s "
					   "refuses to run them.",
					   SNOWFLAKE_LIBRARY_VERSION) :
			 errdetail("The database lacks the objects of version %s until it is updated.",
					   SNOWFLAKE_LIBRARY_VERSION),
		 errhint("Run ALTER EXTENSION snowflake UPDATE in database \"%s\".", database)));
	return true;
}
