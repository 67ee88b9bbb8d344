/*
 * history_guard.cpp
 *	  Refuses a drop of the extension by anyone but a superuser.
 *
 * DROP EXTENSION needs the extension's owner, a superuser.  But the owner
 * of the extension's schema (in PostgreSQL 15 on, the database owner owns
 * public) can drop it all the same, by DROP SCHEMA ... CASCADE or DROP
 * OWNED ... CASCADE, and with it snowflake_layout: IDs made under earlier
 * layouts would then decode under the current one once the extension is
 * created again.  The worker-id leases live in the data directory and
 * survive; the layout history lives in the table, so the drop itself is
 * refused.  The object-access hook sees every object a cascade drops.
 */
extern "C"
{
#include "postgres.h"

#include "catalog/objectaccess.h"
#include "catalog/pg_extension.h"	/* ExtensionRelationId */
#include "commands/extension.h" /* get_extension_name */
#include "miscadmin.h"			/* superuser */
}

#include <cstring>

#include "pg/layout/history_guard.hpp"

void
GuardLayoutHistoryOnAccess(ObjectAccessType access, Oid class_id, Oid object_id)
{
	if (access != OAT_DROP || class_id != ExtensionRelationId || superuser())
		return;

	char	   *name = get_extension_name(object_id);

	if (name == nullptr || strcmp(name, "snowflake") != 0)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("only a superuser can drop the snowflake extension"),
			 errdetail(
				 "Its table snowflake_layout holds the layout history that decodes the "
				 "IDs already issued in this database; DROP SCHEMA or DROP OWNED with "
				 "CASCADE would drop it too."),
			 errhint("Ask a superuser to run DROP EXTENSION snowflake.")));
}
