/*
 * layout_registry.cpp
 *	  Reading and extending the snowflake_layout table (by OID: README.md).
 *
 * The history is cached per backend and reloaded once per transaction, so
 * snowflake_decode() costs one small scan per transaction, not per row.
 * No C++ object with a destructor lives in these frames: the server reports
 * errors by longjmp.
 */
extern "C"
{
#include "postgres.h"

#include "access/transam.h"		/* TransactionIdIsValid */
#include "access/xact.h"        /* transaction callbacks, XactReadOnly */
#include "access/xlog.h"		/* RecoveryInProgress */
#include "catalog/dependency.h" /* getExtensionOfObject */
#include "catalog/pg_proc.h"    /* ProcedureRelationId */
#include "catalog/pg_type.h"	/* type OIDs */
#include "commands/dbcommands.h"	/* get_database_name */
#include "miscadmin.h"		/* user id and security context */
#include "storage/proc.h"		/* MyProc, for the local transaction id */
#include "utils/acl.h"
#include "utils/guc.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
}

#include "pg/extension_table.hpp"
#include "pg/layout/layout_registry.hpp"
#include "pg/reservation/reservation.hpp"
#include "pg/settings.hpp"
#include "pg/shared_state.hpp"
#include "pg/timestamps.hpp"

namespace {

/* A row of snowflake_layout: IDs from first_id on use the layout. */
using HistoryEntry = snowflake::LayoutSegment;

/* snowflake_layout as the extension's script created it. */
enum LayoutColumn
{
	kFirstId,
	kRecordedAt,
	kEpoch,
	kNodeBits,
	kWorkerBits,
	kSequenceBits,
	kLayoutColumnCount,
};

const ExtensionColumn kLayoutColumns[kLayoutColumnCount] = {
	{"first_id", INT8OID},  {"recorded_at", TIMESTAMPTZOID}, {"epoch", TIMESTAMPTZOID},
	{"node_bits", INT4OID}, {"worker_bits", INT4OID},        {"sequence_bits", INT4OID},
};

/* The primary key is (first_id, recorded_at). */
const ExtensionTableShape kLayoutShape = {"snowflake_layout", kLayoutColumns,
										  kLayoutColumnCount, 2};

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
Oid			history_table = InvalidOid; /* the table the history was read from */
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
 * Runs what follows under search_path = pg_catalog, pg_temp (README.md)
 * until AtEOXact_GUC(true, level), or the transaction's abort.
 */
int
PinSearchPath(void)
{
	int			level = NewGUCNestLevel();

	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	return level;
}

/*
 * Opens snowflake_layout of the extension that the function "fn_oid"
 * belongs to, by OID (see pg/extension_table.hpp).
 */
void
OpenLayoutTable(Oid fn_oid, LOCKMODE lockmode, ExtensionTable *table)
{
	Oid extension = getExtensionOfObject(ProcedureRelationId, fn_oid);

	if (!OpenExtensionTable(extension, &kLayoutShape, lockmode, table))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("the snowflake extension has no table snowflake_layout in database "
						"\"%s\"",
						get_database_name(MyDatabaseId))));
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
		(RecoveryInProgress() ? GenerationFloorOrNow(state) : FixGenerationFloor(state));

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

/*
 * Adds a row to the history being loaded, kept in first_id order, one
 * entry per first_id: the one recorded first (as SELECT DISTINCT ON
 * (first_id) ... ORDER BY first_id, recorded_at would keep).
 */
void
AddHistoryRow(const Datum *row, TimestampTz *recorded_at, int *len)
{
	int64 first_id = DatumGetInt64(row[kFirstId]);
	TimestampTz at = DatumGetTimestampTz(row[kRecordedAt]);
	int i = 0;

	while (i < *len && history[i].first_id < first_id)
		i++;
	if (i < *len && history[i].first_id == first_id)
	{
		if (recorded_at[i] <= at)
			return;
	}
	else
	{
		if (*len == kMaxHistory)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("snowflake_layout holds more than %d layouts", kMaxHistory)));
		memmove(&history[i + 1], &history[i], (*len - i) * sizeof(history[0]));
		memmove(&recorded_at[i + 1], &recorded_at[i], (*len - i) * sizeof(recorded_at[0]));
		(*len)++;
	}
	history[i].first_id = first_id;
	history[i].layout.epoch_ms = TimestampTzToUnixMs(DatumGetTimestampTz(row[kEpoch]));
	history[i].layout.node_bits = DatumGetInt32(row[kNodeBits]);
	history[i].layout.worker_bits = DatumGetInt32(row[kWorkerBits]);
	history[i].layout.sequence_bits = DatumGetInt32(row[kSequenceBits]);
	recorded_at[i] = at;
}

/*
 * Reads the history as the caller, who needs SELECT on the table as for a
 * query; row-level security does not apply (only the table's owner could
 * enable it).
 */
void
LoadHistory(Oid fn_oid)
{
	SharedState *state = RequireSharedState();

	if (history_lxid == CurrentLocalTransactionId())
		return;

	ExtensionTable table;
	ExtensionTableScan scan;
	Datum row[kLayoutColumnCount];
	TimestampTz recorded_at[kMaxHistory];
	int len = 0;

	OpenLayoutTable(fn_oid, AccessShareLock, &table);

	AclResult acl = pg_class_aclcheck(RelationGetRelid(table.rel), GetUserId(), ACL_SELECT);

	if (acl != ACLCHECK_OK)
		aclcheck_error(acl, OBJECT_TABLE, RelationGetRelationName(table.rel));

	BeginExtensionTableScan(&table,
							ActiveSnapshotSet() ? GetActiveSnapshot() :
												  GetTransactionSnapshot(),
							&scan);
	while (NextExtensionTableRow(&scan, row))
		AddHistoryRow(row, recorded_at, &len);
	EndExtensionTableScan(&scan);
	history_table = RelationGetRelid(table.rel);
	CloseExtensionTable(&table);
	history_len = len;

	standing = JudgeRunningLayout(state);
	history_lxid = CurrentLocalTransactionId();
}

/* Writing the table needs a read-write transaction (README.md). */
void
RefuseIfReadOnly(void)
{
	if (XactReadOnly)
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot execute snowflake_nextval() in a read-only transaction"),
				 errdetail("The server's snowflake layout is not yet recorded in database "
						   "\"%s\", and recording it writes to snowflake_layout.",
						   get_database_name(MyDatabaseId)),
				 errhint(
					 "Call snowflake_nextval() once in a read-write transaction after a "
					 "layout change.")));
}

/*
 * Records the running layout as the owner of snowflake_layout, so any
 * user's first snowflake_nextval() can record a layout without holding
 * INSERT on the table, and under SECURITY_RESTRICTED_OPERATION.
 */
void
RecordRunningLayout(Oid fn_oid, int64 first_id)
{
	const snowflake::Layout &running = g_settings.layout;
	ExtensionTable table;
	ExtensionTableWrite write;
	Datum row[kLayoutColumnCount];
	Oid			saved_user;
	int			saved_context;

	RefuseIfReadOnly();
	row[kFirstId] = Int64GetDatum(first_id);
	row[kRecordedAt] = TimestampTzGetDatum(
		GetCurrentTransactionStartTimestamp()); /* now() */
	row[kEpoch] = TimestampTzGetDatum(UnixMsToTimestampTz(running.epoch_ms));
	row[kNodeBits] = Int32GetDatum(running.node_bits);
	row[kWorkerBits] = Int32GetDatum(running.worker_bits);
	row[kSequenceBits] = Int32GetDatum(running.sequence_bits);

	OpenLayoutTable(fn_oid, RowExclusiveLock, &table);
	GetUserIdAndSecContext(&saved_user, &saved_context);
	SetUserIdAndSecContext(table.rel->rd_rel->relowner,
						   saved_context | SECURITY_LOCAL_USERID_CHANGE |
							   SECURITY_RESTRICTED_OPERATION);

	int			guc_level = PinSearchPath();

	BeginExtensionTableWrite(&table, &write);
	InsertExtensionTableRow(&write, row);
	EndExtensionTableWrite(&write);
	AtEOXact_GUC(true, guc_level);
	SetUserIdAndSecContext(saved_user, saved_context);
	CloseExtensionTable(&table);

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

Oid
CommittedLayoutTable(void)
{
	/*
	 * A transaction that wrote anything (CREATE EXTENSION, a row put in by
	 * hand) may have made the history it read, and may still roll back.
	 */
	if (!g_layout_confirmed || standing != Standing::kRecorded || recorded_in_transaction ||
		TransactionIdIsValid(GetTopTransactionIdIfAny()))
		return InvalidOid;
	return history_table;
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
