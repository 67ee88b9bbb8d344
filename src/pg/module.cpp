/*
 * module.cpp
 *	  Entry point of the snowflake library.
 *
 * snowflake must be listed in shared_preload_libraries: its settings are
 * read at server start and its worker slots live in shared memory.  Loaded
 * any other way, it defines nothing, and every function reports how to
 * preload it.
 *
 * At server start it validates the settings, checks the layout and the
 * lease space against the ones the data directory last ran with, refuses a
 * data directory that pg_upgrade built without the old one's state files,
 * registers its WAL resource manager and background workers, and requests
 * its shared memory.  Its function manager hook refuses the SECURITY
 * DEFINER functions of older versions in databases not yet updated.
 */
extern "C"
{
#include "postgres.h"

#include "fmgr.h"			/* PG_MODULE_MAGIC */
#include "miscadmin.h"		/* IsBinaryUpgrade,
								 * process_shared_preload_libraries_in_progress */
#include "postmaster/bgworker.h"
}

#include "pg/data_directory.hpp"
#include "pg/layout/confirmed_layouts.hpp"
#include "pg/layout/history_guard.hpp"
#include "pg/layout/layout_file.hpp"
#include "pg/leases/lease_space.hpp"
#include "pg/leases/lease_table.hpp"
#include "pg/old_versions.hpp"
#include "pg/planner/timestamp_rewrite.hpp"
#include "pg/registry/node_registry.hpp"
#include "pg/registry/registry_launcher.hpp"
#include "pg/registry/registry_requests.hpp"
#include "pg/registry/registry_slots.hpp"
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
 * Registers one of the extension's static background workers.  Both run
 * on primaries only (from the end of recovery) and come back after a
 * failure.
 */
static void
RegisterWorker(const char *name, const char *function, int restart_seconds)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = restart_seconds;
	strlcpy(worker.bgw_library_name, "snowflake", BGW_MAXLEN);
	strlcpy(worker.bgw_function_name, function, BGW_MAXLEN);
	strlcpy(worker.bgw_name, name, BGW_MAXLEN);
	strlcpy(worker.bgw_type, name, BGW_MAXLEN);
	RegisterBackgroundWorker(&worker);
}

/*
 * Each subsystem sets up its own part of the shared memory that
 * shared_state.cpp created, so that file depends on none of them.
 */
static void
InitSubsystemState(SharedState *state)
{
	InitRegistryState(state);
	InitReservationState(state);
}

/*
 * What each subsystem records in the data directory before the first ID
 * (pg/data_directory.hpp), so that file depends on none of them.
 */
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
};

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
	RegisterSnowflakeRmgr(kWalRecordKinds, lengthof(kWalRecordKinds));

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
		RegisterWorker("snowflake reservation", "snowflake_reservation_main", 1);
		/* snowflake.database = '': a registry in every database with the extension. */
		if (RegistryIsAutomatic())
			RegisterWorker("snowflake registry launcher",
						   "snowflake_registry_launcher_main", 10);
		else
			RegisterWorker("snowflake registry", "snowflake_registry_main", 10);
	}
	InstallSharedStateHooks(InitSubsystemState);
	/* After the shared state: its startup hook runs first, and so loads first. */
	InstallLeaseTableHooks();
	InstallConfirmedLayoutsHooks();
	InstallTimestampRewrite();
	InstallLayoutHistoryGuard();
	InstallRegistryRequestHooks();
	InstallOldVersionGuard();
}
