/*
 * layout_registry.cpp
 *	  Reading and extending the snowflake_layout table through SPI.
 *
 * The history is cached per backend and reloaded once per transaction, so
 * snowflake_decode() costs one small query per transaction, not per row.
 * No C++ object with a destructor lives in these frames: SPI reports errors
 * by longjmp.
 */
extern "C"
{
#include "postgres.h"

#include "access/htup_details.h"	/* GETSTRUCT */
#include "access/xact.h"		/* transaction callbacks */
#include "access/xlog.h"		/* RecoveryInProgress */
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"	/* type OIDs */
#include "commands/dbcommands.h"	/* get_database_name */
#include "executor/spi.h"
#include "miscadmin.h"		/* user id and security context */
#include "storage/proc.h"		/* MyProc, for the local transaction id */
#include "utils/builtins.h"	/* quote_identifier */
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
}

#include "pg/layout/layout_registry.hpp"
#include "pg/reservation/reservation.hpp"
#include "pg/settings.hpp"
#include "pg/shared_state.hpp"
#include "pg/timestamps.hpp"

namespace {

/* A row of snowflake_layout: IDs from first_id on use the layout. */
using HistoryEntry = snowflake::LayoutSegment;

/* Where the running layout stands against the recorded history. */
enum class Standing
{
	kRecorded,					/* it is the last recorded layout */
	kUnrecorded,				/* nothing is recorded at all */
	kSuccessor,					/* provably above the last one, not recorded */
	kConflict,					/* would not issue strictly larger IDs */
};

constexpr int kMaxHistory = 64;

/* One more than the table can hold: the running, unrecorded successor. */
HistoryEntry history[kMaxHistory + 1];
int			history_len = 0;
Standing	standing = Standing::kUnrecorded;
int64		successor_first_id = 0;
LocalTransactionId history_lxid = InvalidLocalTransactionId;
bool		recorded_in_transaction = false;
bool		callbacks_registered = false;

LocalTransactionId
CurrentLocalTransactionId(void)
{
#if PG_VERSION_NUM >= 170000
	return MyProc->vxid.lxid;
#else
	return MyProc->lxid;
#endif
}

/*
 * Runs what follows under search_path = pg_catalog, pg_temp, so that no
 * object another role created can take part in these statements, whoever
 * calls them.  AtEOXact_GUC(true, level), or the transaction's abort,
 * restores the caller's path.
 */
int
PinSearchPath(void)
{
	int			level = NewGUCNestLevel();

	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	return level;
}

/* The extension's table, schema-qualified through one of its functions. */
char *
LayoutTableName(Oid fn_oid)
{
	char	   *schema = get_namespace_name(get_func_namespace(fn_oid));

	return psprintf("%s.snowflake_layout", quote_identifier(schema));
}

/*
 * A running layout different from the last recorded one may take over only
 * if its smallest ID from this server's floor exceeds the largest ID the
 * old one could have issued before this server started, allowing for the
 * largest drift any run may have used.
 */
Standing
JudgeRunningLayout(SharedState *state)
{
	const snowflake::Layout &running = g_settings.layout;

	if (history_len == 0)
		return Standing::kUnrecorded;

	const snowflake::Layout &last = history[history_len - 1].layout;

	if (last == running)
		return Standing::kRecorded;

	/*
	 * New IDs start at the floor.  Old ones reach at most kMaxReachAheadMs
	 * past this server's start, or the reservation it resumed from.
	 */
	int64		floor_unix_ms = running.epoch_ms +
		(RecoveryInProgress() ? GenerationFloorOrNow(state) : GenerationFloor(state));

	if (!snowflake::IsProvableSuccessor(last, EarlierIdsReachUnixMs(state),
										running, floor_unix_ms))
		return Standing::kConflict;
	successor_first_id = snowflake::SmallestIdFrom(running, floor_unix_ms);
	return Standing::kSuccessor;
}

/*
 * A row recorded by a transaction that then aborts is gone, but the
 * session may go on issuing IDs.  So an abort after recording withdraws
 * the confirmation, and the next snowflake_nextval() checks (and records)
 * again.  The row it records is the same: first_id depends only on the
 * server start.
 */
void
WithdrawIfRecorded(void)
{
	if (!recorded_in_transaction)
		return;
	g_layout_confirmed = false;
	history_lxid = InvalidLocalTransactionId;
}

void
OnTransactionEnd(XactEvent event, void *arg)
{
	(void) arg;
	switch (event)
	{
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			WithdrawIfRecorded();
			recorded_in_transaction = false;
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			recorded_in_transaction = false;
			break;
		default:
			break;
	}
}

void
OnSubtransactionEnd(SubXactEvent event, SubTransactionId mySubid,
					SubTransactionId parentSubid, void *arg)
{
	(void) mySubid;
	(void) parentSubid;
	(void) arg;
	if (event == SUBXACT_EVENT_ABORT_SUB)
		WithdrawIfRecorded();
}

void
LoadHistory(Oid fn_oid)
{
	SharedState *state = RequireSharedState();

	if (history_lxid == CurrentLocalTransactionId())
		return;

	/*
	 * The epoch comes back as a timestamptz and is converted here: no
	 * operator takes part, and the path is pinned, so the history this
	 * decides on is the table's, whatever the caller's search_path holds.
	 */
	int			guc_level = PinSearchPath();

	SPI_connect();
	char	   *query = psprintf("SELECT DISTINCT ON (first_id) first_id, epoch, "
								 "node_bits, worker_bits, sequence_bits "
								 "FROM %s ORDER BY first_id, recorded_at",
								 LayoutTableName(fn_oid));

	if (SPI_execute(query, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the snowflake layout history");
	if (SPI_processed > kMaxHistory)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("snowflake_layout holds more than %d layouts", kMaxHistory)));

	for (uint64 row = 0; row < SPI_processed; row++)
	{
		HeapTuple	tuple = SPI_tuptable->vals[row];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		HistoryEntry *entry = &history[row];

		entry->first_id = DatumGetInt64(SPI_getbinval(tuple, desc, 1, &isnull));
		entry->layout.epoch_ms = TimestampTzToUnixMs(
			DatumGetTimestampTz(SPI_getbinval(tuple, desc, 2, &isnull)));
		entry->layout.node_bits = DatumGetInt32(SPI_getbinval(tuple, desc, 3, &isnull));
		entry->layout.worker_bits = DatumGetInt32(SPI_getbinval(tuple, desc, 4, &isnull));
		entry->layout.sequence_bits = DatumGetInt32(SPI_getbinval(tuple, desc, 5, &isnull));
	}
	history_len = static_cast<int>(SPI_processed);
	SPI_finish();
	AtEOXact_GUC(true, guc_level);

	standing = JudgeRunningLayout(state);
	history_lxid = CurrentLocalTransactionId();
}

/*
 * The owner of the extension's functions, who also owns snowflake_layout.
 * Recording runs as that role, so any user's first snowflake_nextval() can
 * record a layout without holding INSERT on the table.
 */
Oid
ExtensionOwner(Oid fn_oid)
{
	HeapTuple	tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(fn_oid));

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for function %u", fn_oid);

	Oid			owner = reinterpret_cast<Form_pg_proc>(GETSTRUCT(tuple))->proowner;

	ReleaseSysCache(tuple);
	return owner;
}

void
RecordRunningLayout(Oid fn_oid, int64 first_id)
{
	const snowflake::Layout &running = g_settings.layout;
	Oid			types[5] = {INT8OID, TIMESTAMPTZOID, INT4OID, INT4OID, INT4OID};
	Datum		values[5];

	values[0] = Int64GetDatum(first_id);
	values[1] = TimestampTzGetDatum(UnixMsToTimestampTz(running.epoch_ms));
	values[2] = Int32GetDatum(running.node_bits);
	values[3] = Int32GetDatum(running.worker_bits);
	values[4] = Int32GetDatum(running.sequence_bits);

	Oid			saved_user;
	int			saved_context;

	GetUserIdAndSecContext(&saved_user, &saved_context);
	SetUserIdAndSecContext(ExtensionOwner(fn_oid),
						   saved_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);

	int			guc_level = PinSearchPath();

	SPI_connect();
	char	   *query = psprintf("INSERT INTO %s (first_id, epoch, node_bits, worker_bits, "
								 "sequence_bits) VALUES ($1, $2, $3, $4, $5)",
								 LayoutTableName(fn_oid));

	if (SPI_execute_with_args(query, 5, types, values, nullptr, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not record the snowflake layout");
	SPI_finish();
	AtEOXact_GUC(true, guc_level);
	SetUserIdAndSecContext(saved_user, saved_context);

	history[history_len].first_id = first_id;
	history[history_len].layout = running;
	history_len++;
	standing = Standing::kRecorded;

	if (!callbacks_registered)
	{
		RegisterXactCallback(OnTransactionEnd, nullptr);
		RegisterSubXactCallback(OnSubtransactionEnd, nullptr);
		callbacks_registered = true;
	}
	recorded_in_transaction = true;
}

}							/* namespace */

bool		g_layout_confirmed = false;

char *
DescribeLayout(const snowflake::Layout &layout)
{
	return psprintf("epoch %s, %d node bits, %d worker bits, %d sequence bits",
					timestamptz_to_str(UnixMsToTimestampTz(layout.epoch_ms)),
					layout.node_bits, layout.worker_bits, layout.sequence_bits);
}

void
EnsureRunningLayoutRecorded(Oid fn_oid)
{
	LoadHistory(fn_oid);
	switch (standing)
	{
		case Standing::kRecorded:
			break;
		case Standing::kUnrecorded:
			RecordRunningLayout(fn_oid, 0);
			break;
		case Standing::kSuccessor:
			if (history_len >= kMaxHistory)
				ereport(ERROR,
						(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
						 errmsg("snowflake_layout holds more than %d layouts", kMaxHistory)));
			RecordRunningLayout(fn_oid, successor_first_id);
			break;
		case Standing::kConflict:
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("the server's snowflake layout differs from the layout recorded "
							"in database \"%s\"", get_database_name(MyDatabaseId)),
					 errdetail("Recorded: %s. Running: %s. Not every new ID would be larger "
							   "than every ID already issued.",
							   DescribeLayout(history[history_len - 1].layout),
							   DescribeLayout(g_settings.layout)),
					 errhint("Restore the recorded snowflake.* settings, or see "
							 "\"Changing the layout\" in the snowflake documentation.")));
	}
	g_layout_confirmed = true;
}

const snowflake::Layout &
LayoutForId(Oid fn_oid, int64 id)
{
	LoadHistory(fn_oid);
	if (standing == Standing::kUnrecorded ||
		(standing == Standing::kSuccessor && id >= successor_first_id))
		return g_settings.layout;

	int			i = history_len - 1;

	while (i > 0 && history[i].first_id > id)
		i--;
	return history[i].layout;
}

/* The Unix millisecond of the first ID a history entry covers. */
static int64
StartUnixMs(const snowflake::Layout &layout, int64 first_id)
{
	return layout.epoch_ms + snowflake::Decompose(layout, first_id).timestamp;
}

const snowflake::Layout &
LayoutForUnixMs(Oid fn_oid, int64 unix_ms)
{
	LoadHistory(fn_oid);
	if (standing == Standing::kUnrecorded ||
		(standing == Standing::kSuccessor &&
		 unix_ms >= StartUnixMs(g_settings.layout, successor_first_id)))
		return g_settings.layout;

	int			i = history_len - 1;

	while (i > 0 && StartUnixMs(history[i].layout, history[i].first_id) > unix_ms)
		i--;
	return history[i].layout;
}

int
LayoutSegmentsForIds(Oid fn_oid, const snowflake::LayoutSegment **segments)
{
	LoadHistory(fn_oid);
	if (standing == Standing::kUnrecorded)
	{
		static snowflake::LayoutSegment running_only;

		running_only.first_id = 0;
		running_only.layout = g_settings.layout;
		*segments = &running_only;
		return 1;
	}
	*segments = history;
	if (standing == Standing::kSuccessor)
	{
		/* Past the table's rows, so a later load overwrites it. */
		history[history_len].first_id = successor_first_id;
		history[history_len].layout = g_settings.layout;
		return history_len + 1;
	}
	return history_len;
}
