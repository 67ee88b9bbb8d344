/*
 * module.cpp
 *	  Entry point of the snowflake library (src/pg/README.md).
 *
 * snowflake must be listed in shared_preload_libraries: its settings are
 * read at server start and its worker slots live in shared memory.  Loaded
 * any other way, it defines nothing, and every function reports how to
 * preload it.
 */
extern "C"
{
#include "postgres.h"

#include "catalog/objectaccess.h" /* object_access_hook */
#include "catalog/pg_attrdef_d.h" /* AttrDefaultRelationId */
#include "catalog/pg_type_d.h"	/* TypeRelationId */
#include "fmgr.h"			/* PG_MODULE_MAGIC */
#include "miscadmin.h"		/* IsBinaryUpgrade,
								 * process_shared_preload_libraries_in_progress */
#include "optimizer/planner.h"	/* planner_hook */
#include "parser/analyze.h"		/* post_parse_analyze_hook */
#include "postmaster/bgworker.h"
#include "storage/ipc.h"		/* shmem_startup_hook */
}

#include "pg/data_directory.hpp"
#include "pg/layout/confirmed_layouts.hpp"
#include "pg/layout/history_guard.hpp"
#include "pg/layout/layout_file.hpp"
#include "pg/leases/lease_expansion.hpp"
#include "pg/leases/lease_space.hpp"
#include "pg/leases/lease_table.hpp"
#include "pg/primary_settings.hpp"
#include "pg/old_versions.hpp"
#include "pg/planner/timestamp_rewrite.hpp"
#include "pg/registry/node_registry.hpp"
#include "pg/registry/registry_launcher.hpp"
#include "pg/registry/registry_requests.hpp"
#include "pg/registry/registry_slots.hpp"
#include "pg/clock_watch.hpp"
#include "pg/reservation/reservation.hpp"
#include "pg/reservation/reservation_record.hpp"
#include "pg/settings.hpp"
#include "pg/shared_state.hpp"
#include "pg/wal.hpp"

#if PG_VERSION_NUM < 150000
#error "snowflake needs PostgreSQL 15 or later (it uses shmem_request_hook)"
#endif

extern "C"
{
PG_MODULE_MAGIC;

PGDLLEXPORT void _PG_init(void);
}

/*
 * Registers one of the extension's static background workers; they come
 * back after a failure.  The registry's run on primaries only (from the
 * end of recovery); the reservation worker also on a hot standby, from
 * consistency on, to observe the clock there (it leaves the reservation
 * alone until promotion).
 */
static void
RegisterWorker(const char *name, const char *function, int restart_seconds,
			   BgWorkerStartTime start_time = BgWorkerStart_RecoveryFinished)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = start_time;
	worker.bgw_restart_time = restart_seconds;
	strlcpy(worker.bgw_library_name, "snowflake", BGW_MAXLEN);
	strlcpy(worker.bgw_function_name, function, BGW_MAXLEN);
	strlcpy(worker.bgw_name, name, BGW_MAXLEN);
	strlcpy(worker.bgw_type, name, BGW_MAXLEN);
	RegisterBackgroundWorker(&worker);
}

/* Through these two, shared_state.cpp and data_directory.cpp include no subsystem. */
static void
InitSubsystemState(SharedState *state)
{
	InitClockWatch(state);
	InitRegistryState(state);
	InitReservationState(state);
}

static void
RecordSubsystemsBeforeFirstId(void)
{
	RecordLayoutOfDataDirectory();
	RecordLeaseSpaceOfDataDirectory();
}

/* Who replays and describes each kind of WAL record (pg/wal.hpp). */
static const WalRecordHandlers kWalRecordKinds[] = {
	{kXlogReserve, RedoReservationRecord, DescribeReservationRecord},
	{kXlogLease, ReplayLeaseRecord, DescribeLeaseRecord},
	{kXlogSettings, ReplayPrimarySettingsRecord, DescribePrimarySettingsRecord},
};

static shmem_request_hook_type prev_shmem_request_hook = nullptr;
static shmem_startup_hook_type prev_shmem_startup_hook = nullptr;
static object_access_hook_type prev_object_access_hook = nullptr;
static post_parse_analyze_hook_type prev_post_parse_analyze_hook = nullptr;
static planner_hook_type prev_planner_hook = nullptr;

static void
RequestShmem(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestSharedState();
	RequestLeaseTable();
	RequestConfirmedLayouts();
}

/* The shared state first, then the lease table: the order they always started in. */
static void
StartShmem(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	StartSharedState(InitSubsystemState);
	StartLeaseTable();
	StartConfirmedLayouts();
}

/*
 * The forgetting first, then the refusals: a refused DROP raises its error
 * before the registry stops anything.
 */
static void
OnObjectAccess(ObjectAccessType access, Oid class_id, Oid object_id, int sub_id, void *arg)
{
	if (prev_object_access_hook)
		prev_object_access_hook(access, class_id, object_id, sub_id, arg);
	ForgetConfirmedLayoutsOnAccess(access, class_id, object_id);
	GuardLayoutHistoryOnAccess(access, class_id, object_id);
	NoteRegistryObjectAccess(access, class_id, object_id);
	MarkUpgradeTargetOnAccess(access, class_id, object_id);
	/* Defaults that ADD COLUMN and COPY FROM evaluate without a plan. */
	if (access == OAT_POST_CREATE && class_id == AttrDefaultRelationId)
		RefuseLeaseFieldSelectionInDefault(object_id, sub_id);
	if ((access == OAT_POST_CREATE || access == OAT_POST_ALTER) &&
		class_id == TypeRelationId)
		RefuseLeaseFieldSelectionInDomainDefault(object_id);
}

/* A statement, a view's query, an SQL function's body, as parse analysis made them. */
static void
OnParseAnalyze(ParseState *pstate, Query *query, JumbleState *jstate)
{
	if (prev_post_parse_analyze_hook)
		prev_post_parse_analyze_hook(pstate, query, jstate);
	RefuseLeaseFieldSelection(pstate, query);
}

/*
 * The rewritten query: the refusal again, for what parse analysis does not
 * see (lease_expansion.cpp), then the timestamp rewrite.
 */
static void
BeforePlanning(Query *parse)
{
	RefuseLeaseFieldSelection(nullptr, parse);
	RewriteTimestampComparisons(parse);
}

#if PG_VERSION_NUM >= 190000
/* 19 hands the planner the EXPLAIN that asked for the plan, if any. */
static PlannedStmt *
PlanQuery(Query *parse, const char *query_string, int cursor_options,
		  ParamListInfo bound_params, ExplainState *es)
{
	BeforePlanning(parse);
	if (prev_planner_hook != nullptr)
		return prev_planner_hook(parse, query_string, cursor_options, bound_params, es);
	return standard_planner(parse, query_string, cursor_options, bound_params, es);
}
#else
static PlannedStmt *
PlanQuery(Query *parse, const char *query_string, int cursor_options,
		  ParamListInfo bound_params)
{
	BeforePlanning(parse);
	if (prev_planner_hook != nullptr)
		return prev_planner_hook(parse, query_string, cursor_options, bound_params);
	return standard_planner(parse, query_string, cursor_options, bound_params);
}
#endif

/* One hook of each kind, dispatching to the subsystems (as timescaledb and citus do). */
static void
InstallHooks(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = RequestShmem;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = StartShmem;
	prev_object_access_hook = object_access_hook;
	object_access_hook = OnObjectAccess;
	prev_post_parse_analyze_hook = post_parse_analyze_hook;
	post_parse_analyze_hook = OnParseAnalyze;
	prev_planner_hook = planner_hook;
	planner_hook = PlanQuery;
}

void
_PG_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;
	DefineSettings();
	CheckLayoutOfDataDirectory();
	CheckLeaseSpaceOfDataDirectory();
	CheckDataDirectoryAtStart();
	InstallFirstIdRecords(RecordSubsystemsBeforeFirstId);
	RegisterSnowflakeRmgr(kWalRecordKinds, lengthof(kWalRecordKinds),
						  CheckPrimarySettingsAtRedoStart);

	/*
	 * pg_upgrade starts both clusters in binary-upgrade mode and drops and
	 * recreates databases in the new one; a worker connected to one of them
	 * makes the restore fail.  Nothing needs IDs issued during the upgrade.
	 */
	if (IsBinaryUpgrade)
		ereport(LOG,
				(errmsg("snowflake starts no background worker in binary-upgrade mode")));
	else
	{
		RegisterWorker("snowflake reservation", "snowflake_reservation_main", 1,
					   BgWorkerStart_ConsistentState);
		/* snowflake.database = '': a registry in every database with the extension. */
		if (RegistryIsAutomatic())
			RegisterWorker("snowflake registry launcher",
						   "snowflake_registry_launcher_main", 10);
		else
			RegisterWorker("snowflake registry", "snowflake_registry_main", 10);
	}
	InstallHooks();
	RegisterRegistryTransactionCallback();
}
