/*
 * registry_requests.cpp
 *	  Tells the node registries what other sessions did: a committed CREATE
 *	  or ALTER EXTENSION snowflake asks the launcher to probe the database
 *	  again, and DROP DATABASE stops the registry connected to it.
 *
 * The probe is asked for at commit: a registry started before it would not
 * see the extension.  The object-access hook runs before the new row is
 * visible, so it notes the extension's OID, and the check that it is
 * snowflake runs at pre-commit, by OID, as the session's own user.  Why
 * the drop hook stops the registry in time: README.md.
 */
extern "C"
{
#include "postgres.h"

#include "access/xact.h"
#include "access/htup_details.h" /* GETSTRUCT */
#include "catalog/objectaccess.h"
#include "catalog/pg_database.h"  /* DatabaseRelationId */
#include "catalog/pg_extension.h" /* ExtensionRelationId */
#include "commands/extension.h"   /* get_extension_name */
#include "miscadmin.h"            /* MyDatabaseId */
#include "utils/syscache.h"
}

#include <cstring>

#include "pg/registry/registry_requests.hpp"
#include "pg/registry/registry_slots.hpp"

namespace {


/* Extensions this transaction created or altered (OIDs); overflow: unknown. */
constexpr int kNotedExtensions = 4;
Oid noted_extensions[kNotedExtensions];
int noted_count = 0;
bool noted_overflow = false;

/* The transaction changed the snowflake extension: probe at commit. */
bool probe_at_commit = false;

void
NoteExtension(Oid extension)
{
	for (int i = 0; i < noted_count; i++)
		if (noted_extensions[i] == extension)
			return;
	if (noted_count < kNotedExtensions)
		noted_extensions[noted_count++] = extension;
	else
		noted_overflow = true;
}

/*
 * dropdb() calls the drop hook before it refuses to drop the session's own
 * database or a template: such a DROP fails, and its registry must not
 * stop (a registry's restart would forget what it has watched).  Read by
 * OID from the syscache: no name is resolved.
 */
bool
DropDatabaseMaySucceed(Oid database)
{
	if (database == MyDatabaseId)
		return false;

	HeapTuple tuple = SearchSysCache1(DATABASEOID, ObjectIdGetDatum(database));

	if (!HeapTupleIsValid(tuple))
		return true;

	bool is_template = reinterpret_cast<Form_pg_database>(GETSTRUCT(tuple))->datistemplate;

	ReleaseSysCache(tuple);
	return !is_template;
}

}							/* namespace */

void
NoteRegistryObjectAccess(ObjectAccessType access, Oid class_id, Oid object_id)
{
	if ((access == OAT_POST_CREATE || access == OAT_POST_ALTER) &&
		class_id == ExtensionRelationId)
		NoteExtension(object_id);
	else if (access == OAT_DROP && class_id == DatabaseRelationId &&
			 DropDatabaseMaySucceed(object_id))
		StopRegistryOfDatabase(object_id);
}

namespace {

void
ForgetNoted(void)
{
	noted_count = 0;
	noted_overflow = false;
}

void
OnTransactionEvent(XactEvent event, void *arg)
{
	(void) arg;
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			/* The extension's row is visible now; a rolled-back one is not. */
			for (int i = 0; i < noted_count && !probe_at_commit; i++)
			{
				const char *name = get_extension_name(noted_extensions[i]);

				probe_at_commit = name != nullptr && strcmp(name, "snowflake") == 0;
			}
			probe_at_commit = probe_at_commit || noted_overflow;
			ForgetNoted();
			break;
		case XACT_EVENT_COMMIT:
			if (probe_at_commit)
				RequestRegistryProbe(MyDatabaseId, false);
			probe_at_commit = false;
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PRE_PREPARE:
			ForgetNoted();
			probe_at_commit = false;
			break;
		default:
			break;
	}
}

} /* namespace */

void
RegisterRegistryTransactionCallback(void)
{
	RegisterXactCallback(OnTransactionEvent, nullptr);
}
