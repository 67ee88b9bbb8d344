/*
 * registry_slots.cpp
 *	  The shared record of the node registries: set-up, probe requests, the
 *	  stop that DROP DATABASE asks for, and the summary snowflake_status()
 *	  shows.  See registry_slots.hpp for who writes what.
 */
extern "C"
{
#include "postgres.h"

#include <signal.h>

#include "access/htup_details.h"  /* GETSTRUCT */
#include "access/xact.h"          /* GetTopTransactionId */
#include "catalog/pg_database.h"
#include "commands/dbcommands.h" /* get_database_name */
#include "miscadmin.h"           /* MyDatabaseId */
#include "lib/stringinfo.h"
#include "pgstat.h"               /* PG_WAIT_EXTENSION */
#include "storage/latch.h"
#include "storage/procarray.h" /* BackendPidGetProc */
#include "storage/spin.h"
#include "utils/syscache.h"
}

#include "pg/registry/registry_slots.hpp"
#include "pg/settings.hpp"

bool
RegistryIsAutomatic(void)
{
	return g_settings.registry_database == nullptr ||
		g_settings.registry_database[0] == '\0';
}

void
InitRegistrySlots(SharedState *state)
{
	SpinLockInit(&state->registry_mutex);
	state->launcher_pid = 0;
	state->launcher_problem[0] = '\0';
	state->probe_request_count = 0;
	state->probe_all = false;
	for (RegistrySlot &slot : state->registries)
	{
		memset(&slot, 0, sizeof(slot));
		slot.database = InvalidOid;
		slot.phase = kRegistryFree;
	}
	pg_atomic_init_u32(&state->registry_starts, 0);
}

void
WakeRegistryLauncher(SharedState *state)
{
	int pid;

	SpinLockAcquire(&state->registry_mutex);
	pid = state->launcher_pid;
	SpinLockRelease(&state->registry_mutex);
	/* SIGUSR1 sets a background worker's latch (procsignal_sigusr1_handler). */
	if (pid != 0)
		(void) kill(pid, SIGUSR1);
}

void
RequestRegistryProbe(Oid database, bool whatever_flags)
{
	SharedState *state = RequireSharedState();

	SpinLockAcquire(&state->registry_mutex);
	bool queued = false;

	for (uint32 i = 0; i < state->probe_request_count; i++)
		if (state->probe_requests[i] == database)
		{
			queued = true;
			state->probe_whatever_flags[i] |= whatever_flags;
		}
	if (!queued && state->probe_request_count < kProbeRequestCount)
	{
		state->probe_whatever_flags[state->probe_request_count] = whatever_flags;
		state->probe_requests[state->probe_request_count++] = database;
	}
	else if (!queued)
		state->probe_all = true;
	SpinLockRelease(&state->registry_mutex);
	WakeRegistryLauncher(state);
}

void
StopRegistryOfDatabase(Oid database)
{
	SharedState *state = RequireSharedState();
	int pids[kRegistrySlotCount];
	int count = 0;

	SpinLockAcquire(&state->registry_mutex);
	for (RegistrySlot &slot : state->registries)
	{
		if (slot.phase == kRegistryFree || slot.database != database)
			continue;
		slot.dropping = true;
		slot.dropping_xid = GetTopTransactionId();
		if (slot.pid != 0)
			pids[count++] = slot.pid;
	}
	SpinLockRelease(&state->registry_mutex);
	for (int i = 0; i < count; i++)
		(void) kill(pids[i], SIGTERM);

	/* WITH (FORCE) by a non-superuser cannot terminate it: wait 5 s, as dropdb() would. */
	for (int i = 0; i < count; i++)
		for (int tick = 0; tick < 500 && BackendPidGetProc(pids[i]) != nullptr; tick++)
		{
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 10,
							 PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			CHECK_FOR_INTERRUPTS();
		}
}

void
RecomputeRegistryFindings(SharedState *state)
{
	bool collision = false;
	bool skewed = false;

	SpinLockAcquire(&state->registry_mutex);
	for (const RegistrySlot &slot : state->registries)
	{
		if (slot.phase == kRegistryFree || slot.absent)
			continue;
		collision = collision || slot.collision;
		skewed = skewed || (slot.phase == kRegistryRunning && slot.clock_skewed);
	}
	SpinLockRelease(&state->registry_mutex);
	if (collision)
		pg_atomic_fetch_or_u32(&state->registry_findings, kFindingNodeCollision);
	else
		pg_atomic_fetch_and_u32(&state->registry_findings, ~kFindingNodeCollision);
	if (skewed)
		pg_atomic_fetch_or_u32(&state->registry_findings, kFindingClockSkew);
	else
		pg_atomic_fetch_and_u32(&state->registry_findings, ~kFindingClockSkew);
}

TimestampTz
RegistryStatus(SharedState *state, char **problems)
{
	RegistrySlot slots[kRegistrySlotCount];
	char launcher_problem[sizeof(state->launcher_problem)];
	TimestampTz oldest = 0;
	StringInfoData text;

	SpinLockAcquire(&state->registry_mutex);
	memcpy(slots, state->registries, sizeof(slots));
	strlcpy(launcher_problem, state->launcher_problem, sizeof(launcher_problem));
	SpinLockRelease(&state->registry_mutex);

	initStringInfo(&text);
	for (const RegistrySlot &slot : slots)
	{
		/* One that has not completed a round yet ages from its start. */
		TimestampTz round = slot.last_round != 0 ? slot.last_round : slot.started_at;

		if ((slot.phase == kRegistryRunning || slot.phase == kRegistryStarting) &&
			round != 0 && (oldest == 0 || round < oldest))
			oldest = round;
		if (slot.problem[0] == '\0')
			continue;
		if (text.len > 0)
			appendStringInfoString(&text, "; ");

		/* A named registry's problems name its database already. */
		if (RegistryIsAutomatic() && OidIsValid(slot.database))
		{
			const char *name = get_database_name(slot.database);

			if (name != nullptr)
				appendStringInfo(&text, "database \"%s\": ", name);
			else
				appendStringInfo(&text, "database with OID %u: ", slot.database);
		}
		appendStringInfoString(&text, slot.problem);
	}
	if (launcher_problem[0] != '\0')
		appendStringInfo(&text, "%s%s", text.len > 0 ? "; " : "", launcher_problem);
	*problems = text.len > 0 ? text.data : nullptr;
	return oldest;
}

/* No registry runs in a template (README.md); read by OID from the syscache. */
void
RefuseInTemplateDatabase(void)
{
	HeapTuple tuple = SearchSysCache1(DATABASEOID, ObjectIdGetDatum(MyDatabaseId));
	bool is_template = false;

	if (HeapTupleIsValid(tuple))
	{
		is_template = reinterpret_cast<Form_pg_database>(GETSTRUCT(tuple))->datistemplate;
		ReleaseSysCache(tuple);
	}
	if (is_template)
		ereport(
			ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("snowflake does not issue IDs or leases in template database \"%s\"",
					get_database_name(MyDatabaseId)),
			 errdetail("No node registry runs in a template, so node-id collisions "
					   "would go undetected there."),
			 errhint("Use a database created from it, or ALTER DATABASE ... "
					 "IS_TEMPLATE false.")));
}

void
RequestRegistryOnceIfMissing(void)
{
	static bool requested = false;

	if (requested || !RegistryIsAutomatic())
		return;
	RefuseInTemplateDatabase();
	requested = true;

	SharedState *state = RequireSharedState();
	bool present = false;

	SpinLockAcquire(&state->registry_mutex);
	for (const RegistrySlot &slot : state->registries)
		present = present ||
			(slot.database == MyDatabaseId &&
			 (slot.phase == kRegistryStarting || slot.phase == kRegistryRunning));
	SpinLockRelease(&state->registry_mutex);
	if (!present)
		RequestRegistryProbe(MyDatabaseId, true);
}
