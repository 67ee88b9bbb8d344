/*
 * registry_launcher.cpp
 *	  The "snowflake registry launcher" (automatic mode, snowflake.database
 *	  = ''): one node registry in every database that holds the extension.
 *	  When it probes, restarts and frees registries: README.md.
 */
extern "C"
{
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "lib/stringinfo.h"
#include "storage/procarray.h" /* TransactionIdIsInProgress */
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/spin.h"
#include "utils/backend_status.h" /* pgstat_report_appname */
#include "utils/guc.h"             /* ProcessConfigFile */
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"
}

#include "pg/registry/registry_launcher.hpp"
#include "pg/registry/registry_slots.hpp"
#include "pg/settings.hpp"
#include "pg/worker_exit.hpp"

namespace {

constexpr int kProbesInFlight = 2;

/*
 * A registry that has not started (found the extension, or reported why
 * it cannot) within this many intervals, and at least kStaleStartMinMs, no
 * longer counts as a probe in flight, and is reported.
 */
constexpr int kStaleStartIntervals = 5;
constexpr int kStaleStartMinMs = 5000;

struct KnownDatabase
{
	Oid oid;
	NameData name;
	bool probe_by_scan;	   /* not a template, and allows connections */
	bool probe_on_request; /* not a template: a session there asked */
};

/* The databases probed and found without the extension. */
List *absent_databases = NIL;

/* Databases a session asked to probe at its first ID or lease. */
List *requested_databases = NIL;

/* The handles of the registries this launcher started, by slot. */
BackgroundWorkerHandle *handles[kRegistrySlotCount];

/*
 * The databases, read by a heap scan of pg_database, into "context": all
 * but those half dropped; templates and those refusing connections too (a
 * registry that runs there keeps running), marked not to be probed.
 */
KnownDatabase *
ListDatabases(MemoryContext context, int *count)
{
	int capacity = 16;
	KnownDatabase *databases = static_cast<KnownDatabase *>(
		MemoryContextAlloc(context, capacity * sizeof(KnownDatabase)));

	*count = 0;
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	(void) GetTransactionSnapshot();

	Relation rel = table_open(DatabaseRelationId, AccessShareLock);
	TableScanDesc scan = table_beginscan_catalog(rel, 0, nullptr);
	HeapTuple tuple;

	while ((tuple = heap_getnext(scan, ForwardScanDirection)) != nullptr)
	{
		Form_pg_database database = reinterpret_cast<Form_pg_database>(GETSTRUCT(tuple));

		/* A database half dropped (DATCONNLIMIT_INVALID_DB). */
		if (database->datconnlimit == -2)
			continue;
		if (*count == capacity)
		{
			capacity *= 2;
			databases = static_cast<KnownDatabase *>(
				repalloc(databases, capacity * sizeof(KnownDatabase)));
		}
		databases[*count].oid = database->oid;
		databases[*count].name = database->datname;
		databases[*count].probe_by_scan = database->datallowconn &&
			!database->datistemplate;
		/* A session in a template would block CREATE DATABASE from it. */
		databases[*count].probe_on_request = !database->datistemplate;
		(*count)++;
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	CommitTransactionCommand();
	return databases;
}

const KnownDatabase *
FindDatabase(const KnownDatabase *databases, int count, Oid oid)
{
	for (int i = 0; i < count; i++)
		if (databases[i].oid == oid)
			return &databases[i];
	return nullptr;
}

/* Sets the launcher's problem ("" for none), logging each new one. */
void
SetLauncherProblem(SharedState *state, const char *problem, const char *hint)
{
	bool changed;

	SpinLockAcquire(&state->registry_mutex);
	changed = strncmp(state->launcher_problem, problem,
					  sizeof(state->launcher_problem) - 1) != 0;
	strlcpy(state->launcher_problem, problem, sizeof(state->launcher_problem));
	SpinLockRelease(&state->registry_mutex);
	if (changed && problem[0] != '\0')
		ereport(WARNING,
				(errmsg("snowflake node registry cannot run: %s", problem),
				 errdetail("Until it runs, node-id collisions with this node go undetected "
						   "there."),
				 errhint("%s", hint)));
}

/*
 * Starts the registry of "database" in slot "index" (free, or stopped), or
 * records in the slot why it cannot.
 */
void
StartRegistry(SharedState *state, int index, const KnownDatabase *database)
{
	RegistrySlot *slot = &state->registries[index];
	BackgroundWorker worker;

	SpinLockAcquire(&state->registry_mutex);
	if (slot->database != database->oid)
	{
		/* A new database: nothing of an earlier one carries over. */
		memset(slot, 0, sizeof(*slot));
		slot->database = database->oid;
	}
	slot->phase = kRegistryStarting;
	slot->pid = 0;
	slot->absent = false;
	slot->dropping = false;
	slot->dropping_xid = InvalidTransactionId;
	slot->reprobe = false;
	slot->started_at = GetCurrentTimestamp();
	SpinLockRelease(&state->registry_mutex);
	requested_databases = list_delete_oid(requested_databases, database->oid);

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART; /* the launcher decides */
	strlcpy(worker.bgw_library_name, "snowflake", BGW_MAXLEN);
	strlcpy(worker.bgw_function_name, "snowflake_registry_main", BGW_MAXLEN);
	snprintf(worker.bgw_name, BGW_MAXLEN, "snowflake registry in database %u",
			 database->oid);
	strlcpy(worker.bgw_type, "snowflake registry", BGW_MAXLEN);
	worker.bgw_main_arg = ObjectIdGetDatum(database->oid);
	memcpy(worker.bgw_extra, &index, sizeof(index));
	worker.bgw_notify_pid = MyProcPid;

	if (handles[index] != nullptr)
		pfree(handles[index]);
	handles[index] = nullptr;

	MemoryContext previous = MemoryContextSwitchTo(TopMemoryContext);
	bool registered = RegisterDynamicBackgroundWorker(&worker, &handles[index]);

	MemoryContextSwitchTo(previous);
	if (registered)
		return;

	char problem[sizeof(slot->problem)];
	bool changed;

	snprintf(problem, sizeof(problem),
			 "no background worker slot is free for its registry (max_worker_processes)");
	SpinLockAcquire(&state->registry_mutex);
	slot->phase = kRegistryStopped;
	changed = strcmp(slot->problem, problem) != 0;
	strlcpy(slot->problem, problem, sizeof(slot->problem));
	SpinLockRelease(&state->registry_mutex);
	if (changed)
		ereport(WARNING,
				(errmsg("snowflake node registry cannot run in database \"%s\": %s",
						NameStr(database->name), problem),
				 errdetail("Until it runs, node-id collisions with this node go undetected "
						   "there."),
				 errhint("Raise max_worker_processes (each database with the extension "
						 "needs one for its registry) and restart the server, or set "
						 "snowflake.database to the one database to register.")));
}

/* Takes the probe requests: marks them on their slots, forgets them as absent. */
void
TakeProbeRequests(SharedState *state)
{
	Oid requests[kProbeRequestCount];
	bool whatever_flags[kProbeRequestCount];
	uint32 count;
	bool all;

	SpinLockAcquire(&state->registry_mutex);
	count = state->probe_request_count;
	memcpy(requests, state->probe_requests, sizeof(requests));
	memcpy(whatever_flags, state->probe_whatever_flags, sizeof(whatever_flags));
	all = state->probe_all;
	state->probe_request_count = 0;
	state->probe_all = false;
	for (RegistrySlot &slot : state->registries)
		for (uint32 i = 0; i < count; i++)
			if (slot.phase != kRegistryFree && slot.database == requests[i])
				slot.reprobe = true;
	SpinLockRelease(&state->registry_mutex);

	if (all)
	{
		list_free(absent_databases);
		absent_databases = NIL;
	}
	for (uint32 i = 0; i < count; i++)
	{
		absent_databases = list_delete_oid(absent_databases, requests[i]);
		if (whatever_flags[i])
			requested_databases = list_append_unique_oid(requested_databases, requests[i]);
	}
}

/* What to do with a slot whose registry stopped. */
enum class StoppedAction
{
	kNone,
	kFree,
	kFreeAbsent,
	kRestart,
};

/*
 * "exists": the database is in pg_database (a template, or one refusing
 * connections, too).  A DROP DATABASE that stopped the registry may fail
 * after it did (dropdb() calls the hook before its checks): once that
 * transaction has ended, a database still there gets its registry back in
 * the same slot, with its finding.
 */
StoppedAction
DecideStopped(const RegistrySlot &slot, bool exists, bool drop_in_progress, bool periodic)
{
	if (!exists)
		return StoppedAction::kFree;
	if (slot.dropping)
		return drop_in_progress ? StoppedAction::kNone : StoppedAction::kRestart;
	if (slot.absent)
		return slot.reprobe ? StoppedAction::kRestart : StoppedAction::kFreeAbsent;
	return periodic ? StoppedAction::kRestart : StoppedAction::kNone;
}

/*
 * For each slot, the DROP DATABASE transaction it names and whether it is
 * still running.  Read before the list of databases: a DROP that has ended
 * by then shows in it.  (RecentXmin, from an earlier snapshot, is no later
 * than it should be.)
 */
void
NoteDropsInProgress(SharedState *state, TransactionId *drop_xid, bool *drop_in_progress)
{
	for (int i = 0; i < kRegistrySlotCount; i++)
	{
		SpinLockAcquire(&state->registry_mutex);
		drop_xid[i] = state->registries[i].dropping ? state->registries[i].dropping_xid :
													  InvalidTransactionId;
		SpinLockRelease(&state->registry_mutex);
		drop_in_progress[i] = TransactionIdIsValid(drop_xid[i]) &&
			TransactionIdIsInProgress(drop_xid[i]);
	}
}

/*
 * Copies the slots into "slots", first marking a starting registry that
 * exited before it got to its slot as stopped, and reporting one that has
 * been starting for too long.
 */
void
CopySlotsMarkingStuck(SharedState *state, RegistrySlot *slots)
{
	TimestampTz now = GetCurrentTimestamp();
	int stale_ms = Max(kStaleStartIntervals * g_settings.registry_interval_ms,
					   kStaleStartMinMs);
	bool gone[kRegistrySlotCount];

	/* Asked before the spinlock: GetBackgroundWorkerPid takes a lock. */
	for (int i = 0; i < kRegistrySlotCount; i++)
	{
		pid_t pid;

		gone[i] = handles[i] != nullptr &&
			GetBackgroundWorkerPid(handles[i], &pid) == BGWH_STOPPED;
	}

	SpinLockAcquire(&state->registry_mutex);
	for (int i = 0; i < kRegistrySlotCount; i++)
	{
		RegistrySlot *slot = &state->registries[i];

		if (gone[i] && slot->phase == kRegistryStarting && slot->pid == 0)
		{
			slot->phase = kRegistryStopped;
			strlcpy(slot->problem,
					"its registry exited before it started (the server log says why)",
					sizeof(slot->problem));
		}
		else if (slot->phase == kRegistryStarting && slot->problem[0] == '\0' &&
				 TimestampDifferenceExceeds(slot->started_at, now, stale_ms))
			snprintf(slot->problem, sizeof(slot->problem),
					 "its registry has not started within %d ms (it may be waiting for a "
					 "lock: see pg_locks)",
					 stale_ms);
	}
	memcpy(slots, state->registries, sizeof(RegistrySlot) * kRegistrySlotCount);
	SpinLockRelease(&state->registry_mutex);
}

/*
 * Frees, restarts or leaves each stopped registry (DecideStopped), in the
 * shared slots and in the copy "slots".  Returns how many probes are in
 * flight after it.
 */
int
SettleStoppedRegistries(SharedState *state, RegistrySlot *slots,
						const KnownDatabase *databases, int count,
						const TransactionId *drop_xid, const bool *drop_in_progress,
						bool periodic)
{
	int in_flight = 0;
	bool freed = false;

	for (int i = 0; i < kRegistrySlotCount; i++)
	{
		const RegistrySlot &slot = slots[i];

		/* One that reported a problem, or is stuck, no longer holds up others. */
		if (slot.phase == kRegistryStarting && slot.problem[0] == '\0')
			in_flight++;
		if (slot.phase != kRegistryStopped)
			continue;

		const KnownDatabase *database = FindDatabase(databases, count, slot.database);

		/* A DROP that began after NoteDropsInProgress: settled at the next pass. */
		bool drop_pending = drop_in_progress[i] || slot.dropping_xid != drop_xid[i];

		switch (DecideStopped(slot, database != nullptr, drop_pending, periodic))
		{
			case StoppedAction::kNone:
				break;
			case StoppedAction::kFreeAbsent:
				absent_databases = lappend_oid(absent_databases, slot.database);
				/* FALLTHROUGH */
			case StoppedAction::kFree:
				SpinLockAcquire(&state->registry_mutex);
				memset(&state->registries[i], 0, sizeof(RegistrySlot));
				state->registries[i].database = InvalidOid;
				SpinLockRelease(&state->registry_mutex);
				slots[i].phase = kRegistryFree;
				slots[i].database = InvalidOid;
				freed = true;
				break;
			case StoppedAction::kRestart:
				StartRegistry(state, i, database);
				in_flight++;
				break;
		}
	}
	if (freed)
		RecomputeRegistryFindings(state);
	return in_flight;
}

/* "oids" without the databases no longer listed (their OIDs may come back). */
List *
KeepListedDatabases(List *oids, const KnownDatabase *databases, int count)
{
	List *kept = NIL;
	ListCell *cell;

	foreach (cell, oids)
		if (FindDatabase(databases, count, lfirst_oid(cell)) != nullptr)
			kept = lappend_oid(kept, lfirst_oid(cell));
	list_free(oids);
	return kept;
}

/*
 * Probes the databases that have no slot and were not found absent, at
 * most kProbesInFlight at once.  Names the databases no slot is left for
 * in "unplaced_names"; returns how many.
 */
int
StartProbes(SharedState *state, RegistrySlot *slots, const KnownDatabase *databases,
			int count, int in_flight, StringInfo unplaced_names)
{
	int unplaced = 0;

	for (int d = 0; d < count; d++)
	{
		const KnownDatabase *database = &databases[d];
		int free_slot = -1;
		bool placed = false;

		if (list_member_oid(absent_databases, database->oid))
			continue;
		if (!database->probe_by_scan &&
			!(database->probe_on_request &&
			  list_member_oid(requested_databases, database->oid)))
			continue;
		for (int i = 0; i < kRegistrySlotCount; i++)
		{
			placed = placed ||
				(slots[i].phase != kRegistryFree && slots[i].database == database->oid);
			if (free_slot < 0 && slots[i].phase == kRegistryFree)
				free_slot = i;
		}
		if (placed)
			continue;
		if (free_slot < 0)
		{
			/* The attacker may pick the first: name as many as fit, and count all. */
			appendStringInfo(unplaced_names, "%s\"%s\"", unplaced > 0 ? ", " : "",
							 NameStr(database->name));
			unplaced++;
			continue;
		}
		/* Waiting for a probe to finish, this database keeps its slot in this count. */
		slots[free_slot].phase = kRegistryStarting;
		slots[free_slot].database = database->oid;
		if (in_flight >= kProbesInFlight)
			continue;
		StartRegistry(state, free_slot, database);
		in_flight++;
	}
	return unplaced;
}

/*
 * The launcher's problem in snowflake_status(): the databases no registry
 * slot is left for, cut after the last whole name that fits; cleared when
 * there are none.
 */
void
ReportUnplaced(SharedState *state, int unplaced, StringInfo unplaced_names)
{
	if (unplaced == 0)
	{
		SetLauncherProblem(state, "", "");
		return;
	}

	char problem[sizeof(state->launcher_problem)];
	int prefix = snprintf(problem, sizeof(problem),
						  "%d database%s cannot be probed: all %d registry slots are "
						  "taken: ",
						  unplaced, unplaced == 1 ? "" : "s", kRegistrySlotCount);
	int room = static_cast<int>(sizeof(problem)) - prefix - 1;

	if (unplaced_names->len > room)
	{
		int cut = room - 5;

		while (cut > 0 && unplaced_names->data[cut] != ',')
			cut--;
		unplaced_names->data[cut] = '\0';
		strlcat(unplaced_names->data, ", ...", unplaced_names->maxlen);
	}
	strlcat(problem, unplaced_names->data, sizeof(problem));
	SetLauncherProblem(state, problem,
					   "Set snowflake.database to the database whose snowflake_nodes "
					   "the replication carries, and restart the server.");
}

/*
 * One pass: takes the requests, lists the databases, settles the stopped
 * registries and starts the probes still to run.  "periodic": a
 * registry interval passed since the last restart of failed registries.
 */
void
RunPass(SharedState *state, bool periodic, MemoryContext pass_context)
{
	int count;
	TransactionId drop_xid[kRegistrySlotCount];
	bool drop_in_progress[kRegistrySlotCount];
	RegistrySlot slots[kRegistrySlotCount];

	TakeProbeRequests(state);
	NoteDropsInProgress(state, drop_xid, drop_in_progress);

	KnownDatabase *databases = ListDatabases(pass_context, &count);

	CopySlotsMarkingStuck(state, slots);

	int in_flight = SettleStoppedRegistries(state, slots, databases, count, drop_xid,
											drop_in_progress, periodic);

	absent_databases = KeepListedDatabases(absent_databases, databases, count);
	requested_databases = KeepListedDatabases(requested_databases, databases, count);

	StringInfoData unplaced_names;

	initStringInfo(&unplaced_names);
	ReportUnplaced(state,
				   StartProbes(state, slots, databases, count, in_flight, &unplaced_names),
				   &unplaced_names);
	pfree(unplaced_names.data); /* TopMemoryContext is current */
}

/* Marks the launcher gone, so that nobody signals a stale pid. */
void
ClearLauncherPid(int code, Datum arg)
{
	(void) code;
	(void) arg;

	SharedState *state = RequireSharedState();

	SpinLockAcquire(&state->registry_mutex);
	if (state->launcher_pid == MyProcPid)
		state->launcher_pid = 0;
	SpinLockRelease(&state->registry_mutex);
}

/*
 * Becomes the launcher.  Registries an earlier launcher of this run started
 * keep running (their exit wakes this one); one it started that never
 * reached its slot is marked stopped, to be started again.
 */
void
BecomeLauncher(SharedState *state)
{
	SpinLockAcquire(&state->registry_mutex);
	state->launcher_pid = MyProcPid;
	for (RegistrySlot &slot : state->registries)
		if (slot.phase == kRegistryStarting && slot.pid == 0)
			slot.phase = kRegistryStopped;
	SpinLockRelease(&state->registry_mutex);
	before_shmem_exit(ClearLauncherPid, 0);
}

} /* namespace */

void
snowflake_registry_launcher_main(Datum arg)
{
	(void) arg;
	InstallWorkerSignalHandlers();
	BackgroundWorkerUnblockSignals();

	SharedState *state = RequireSharedState();

	/* Connected to no database: it reads only the shared catalog pg_database. */
	BackgroundWorkerInitializeConnection(nullptr, nullptr, 0);
	pgstat_report_appname("snowflake registry launcher");
	BecomeLauncher(state);

	MemoryContext pass_context = AllocSetContextCreate(TopMemoryContext,
													   "snowflake registry launcher pass",
													   ALLOCSET_DEFAULT_SIZES);
	TimestampTz last_periodic = GetCurrentTimestamp();

	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}

		TimestampTz now = GetCurrentTimestamp();
		bool periodic = TimestampDifferenceExceeds(last_periodic, now,
												   g_settings.registry_interval_ms);

		if (periodic)
			last_periodic = now;

		/* The list of absent databases lives in TopMemoryContext, current here. */
		PG_TRY();
		{
			RunPass(state, periodic, pass_context);
		}
		PG_CATCH();
		{
			/* Log it and try again at the next wake. */
			MemoryContextSwitchTo(TopMemoryContext);
			EmitErrorReport();
			FlushErrorState();
			AbortCurrentTransaction();
		}
		PG_END_TRY();
		MemoryContextSwitchTo(TopMemoryContext);
		MemoryContextReset(pass_context);

		WaitForWorkOrExit(g_settings.registry_interval_ms);
	}
}
