/*
 * old_versions.cpp
 *	  What the library does about a database whose extension is older than
 *	  the library (ALTER EXTENSION snowflake UPDATE runs in one database at
 *	  a time).  Nothing here runs a query or resolves a name: pg_extension
 *	  is read by OID.
 */
extern "C"
{
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/pg_extension.h"
#include "commands/dbcommands.h" /* get_database_name */
#include "miscadmin.h"      /* MyDatabaseId */
#include "utils/builtins.h" /* text_to_cstring */
#include "utils/fmgroids.h"
#include "utils/rel.h"
}

#include "core/extension_version.hpp"
#include "pg/extension_table.hpp"
#include "pg/old_versions.hpp"

#ifndef SNOWFLAKE_LIBRARY_VERSION
#error \
	"the Makefile defines SNOWFLAKE_LIBRARY_VERSION (snowflake.control's default_version)"
#endif

namespace {

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

} /* namespace */

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

	ereport(WARNING,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("snowflake extension in database \"%s\" is at version %s, older than "
					"library version %s",
					database, version, SNOWFLAKE_LIBRARY_VERSION),
			 errdetail("The database lacks the objects of version %s until it is updated.",
					   SNOWFLAKE_LIBRARY_VERSION),
			 errhint("Run ALTER EXTENSION snowflake UPDATE in database \"%s\".",
					 database)));
	return true;
}
