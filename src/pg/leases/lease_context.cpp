/*
 * lease_context.cpp
 *	  snowflake_lease_context(): the C entry point of version 1.4's SQL
 *	  lease functions, kept so that they refuse clearly.
 *
 * Version 1.4 kept leases in a table of each database, changed through
 * this function; from 1.5 on the library keeps them in the server (see
 * lease_table.hpp).  Under this library a database whose extension is
 * still at 1.4 must not lease from its table: two sources would hand out
 * one worker id twice.  Its functions get this refusal until
 * ALTER EXTENSION snowflake UPDATE carries the table's leases over.
 */
extern "C"
{
#include "postgres.h"

#include "fmgr.h"
}

extern "C"
{
PG_FUNCTION_INFO_V1(snowflake_lease_context);
}

extern "C" Datum
snowflake_lease_context(PG_FUNCTION_ARGS)
{
	(void) fcinfo;
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("snowflake extension version 1.4 cannot lease worker ids under library "
					"version 1.5"),
			 errdetail("Version 1.5 keeps leases in the server, not in the table "
					   "snowflake_worker_leases."),
			 errhint("Run ALTER EXTENSION snowflake UPDATE, first in the database that "
					 "snowflake.database names: it carries the table's leases over.")));
	PG_RETURN_NULL();
}
