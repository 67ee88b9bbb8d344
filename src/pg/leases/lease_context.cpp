/*
 * lease_context.cpp
 *	  snowflake_lease_context(): what the lease functions need from the
 *	  server, in one row.
 *
 * The lease functions themselves are SQL (snowflake--1.3--1.4.sql): they
 * keep their state in the table snowflake_worker_leases.  What only the
 * library knows, they read here: the running layout and node id, where
 * the lease space starts, this run's generation floor and identity, and
 * the connection window in force.  Internal: not granted to PUBLIC.
 *
 * It also refuses what would make a lease unsafe to use, before the
 * function that calls it changes anything:
 *	- a transaction block, a subtransaction, or a place in a pipeline after
 *	  another statement: the client would read a grant or a renewal that a
 *	  later ROLLBACK or failure undoes, and generate under a lease the table
 *	  no longer records;
 *	- recovery: a standby's table is a copy;
 *	- a database other than snowflake.database: each database with the
 *	  extension has the table, and two of them would hand out one worker id.
 * And it makes the transaction commit synchronously (flushed, and confirmed
 * by synchronous standbys when there are any), whatever synchronous_commit
 * the session has: a lease the client has seen must survive a crash or a
 * failover.
 */
extern "C"
{
#include "postgres.h"

#include "access/htup_details.h" /* heap_form_tuple */
#include "access/xact.h"         /* IsTransactionBlock, synchronous_commit */
#include "access/xlog.h"         /* RecoveryInProgress */
#include "commands/dbcommands.h" /* get_database_name */
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"           /* MyDatabaseId */
#include "utils/builtins.h"      /* text_to_cstring */
#include "utils/guc.h"           /* set_config_option */
#include "utils/timestamp.h"     /* TimestampTzGetDatum */
#include "utils/uuid.h"
}

#include "pg/reservation/reservation.hpp"
#include "pg/settings.hpp"
#include "pg/shared_state.hpp"
#include "pg/timestamps.hpp"

extern "C"
{
PG_FUNCTION_INFO_V1(snowflake_lease_context);
}

/* The checks above; "caller" names the SQL function in messages. */
static void
RefuseUnsafeLeaseCall(const char *caller)
{
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot lease snowflake worker ids during recovery"),
				 errhint("Call %s on the primary.", caller)));
	/* A subtransaction's block state counts as a transaction block too. */
	if (IsSubTransaction())
		ereport(ERROR,
				(errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
				 errmsg("%s cannot run inside a subtransaction", caller),
				 errdetail("A lease must be committed before the client uses it."),
				 errhint("Call it in autocommit mode, in a statement of its own.")));
	if (IsTransactionBlock())
		ereport(ERROR,
				(errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
				 errmsg("%s cannot run inside a transaction block", caller),
				 errdetail("A lease must be committed before the client uses it."),
				 errhint("Call it in autocommit mode, in a statement of its own.")));

	/*
	 * In an extended-protocol pipeline, the statements before the next Sync
	 * share one implicit transaction: a later failure would undo a lease
	 * whose result the client has read.  Refuse to follow another statement
	 * there, and make the transaction commit right after this one, as
	 * CREATE DATABASE does.
	 */
	if (MyXactFlags & XACT_FLAGS_PIPELINING)
		ereport(ERROR,
				(errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
				 errmsg("%s cannot be executed within a pipeline", caller),
				 errdetail("A lease must be committed before the client uses it."),
				 errhint("Call it in autocommit mode, in a statement of its own.")));
	MyXactFlags |= XACT_FLAGS_NEEDIMMEDIATECOMMIT;

	char *database = get_database_name(MyDatabaseId);

	if (database == nullptr || strcmp(database, g_settings.registry_database) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("snowflake worker ids are leased in database \"%s\", not \"%s\"",
						g_settings.registry_database, database ? database : ""),
				 errdetail("One database per server keeps the leases, so that no worker "
						   "id is leased twice."),
				 errhint("Connect to the database that snowflake.database names.")));
}

extern "C" Datum
snowflake_lease_context(PG_FUNCTION_ARGS)
{
	SharedState *state = RequireSharedState();

	RefuseUnsafeLeaseCall(text_to_cstring(PG_GETARG_TEXT_PP(0)));
	if (synchronous_commit < SYNCHRONOUS_COMMIT_REMOTE_FLUSH)
		(void) set_config_option("synchronous_commit", "on", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_LOCAL, true, 0, false);

	const snowflake::Layout &layout = g_settings.layout;
	TupleDesc tupdesc;
	Datum values[11];
	bool nulls[11] = {false};

	/*
	 * Sessions of this run issue nothing below the floor, and sessions of
	 * earlier runs nothing above floor - 1: a worker id that joined the
	 * lease space at this start is safe to lease above it.
	 */
	int64 floor = GenerationFloor(state);

	if (get_call_result_type(fcinfo, nullptr, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	values[0] = Int32GetDatum(g_settings.node_id);
	values[1] = Int32GetDatum(static_cast<int32>(SessionWorkerIds()));
	values[2] = Int32GetDatum(g_settings.lease_workers);
	values[3] = TimestampTzGetDatum(UnixMsToTimestampTz(layout.epoch_ms + floor - 1));
	values[4] = UUIDPGetDatum(&state->instance_id);
	values[5] = Int32GetDatum(g_settings.lease_connection_window_ms);
	values[6] = TimestampTzGetDatum(UnixMsToTimestampTz(layout.epoch_ms));
	values[7] = Int32GetDatum(layout.TimestampBits());
	values[8] = Int32GetDatum(layout.node_bits);
	values[9] = Int32GetDatum(layout.worker_bits);
	values[10] = Int32GetDatum(layout.sequence_bits);
	PG_RETURN_DATUM(
		HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}
