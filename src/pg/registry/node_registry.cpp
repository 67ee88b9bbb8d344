/*
 * node_registry.cpp
 *	  The "snowflake registry" background worker of one database:
 *	  heartbeats in its snowflake_nodes and node-id collision detection
 *	  (modes and invariants: README.md).  It keeps no state across rounds
 *	  but the beat counts and clocks it saw.
 */
extern "C"
{
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"		/* GetSystemIdentifier, GetWALInsertionTimeLine */
#include "commands/dbcommands.h" /* get_database_name */
#include "catalog/pg_type.h"	/* type OIDs */
#include "miscadmin.h"
#include "port/atomics.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "postmaster/postmaster.h"	/* PostPortNumber */
#include "storage/ipc.h"            /* before_shmem_exit, proc_exit */
#include "storage/spin.h"
#include "utils/backend_status.h"	/* pgstat_report_appname */
#include "utils/builtins.h"         /* text datums */
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"
#include "utils/wait_event.h"
}

#include <unistd.h>

#include "pg/clock.hpp"
#include "pg/extension_table.hpp"
#include "pg/old_versions.hpp"
#include "pg/registry/clock_skew.hpp"
#include "pg/registry/node_registry.hpp"
#include "pg/registry/nodes_table.hpp"
#include "pg/registry/registry_slots.hpp"
#include "pg/registry/replication_check.hpp"
#include "pg/registry/split_brain.hpp"
#include "pg/settings.hpp"
#include "pg/timestamps.hpp"
#include "pg/worker_exit.hpp"


namespace {

/* Other instances with our node_id, and the beat count seen last round. */
constexpr int kMaxPeers = 32;

struct PeerBeat
{
	char		instance_id[UUID_LEN * 2 + 5];
	int64		beats;
	int64		advanced_at_us;	/* monotonic time its count last grew; 0: never */
	char		description[192];	/* where it runs: for the server log only */
	bool		seen;			/* in the current round */
};

PeerBeat	peers[kMaxPeers];
int			peer_count = 0;

/* This worker's slot in SharedState::registries, and its database's name. */
int my_slot = 0;
char my_database[NAMEDATALEN] = "";

/* Rounds this worker completed: until a full window, it may not clear a finding. */
int rounds_completed = 0;

/*
 * Rewrites this instance's row, adding one beat.  Delete and insert, not
 * update: replication applies an INSERT even on a peer that missed the row
 * (say, it was written before the peer subscribed), where an UPDATE would
 * be skipped as a conflict forever.
 */
void
Heartbeat(SharedState *state, const ExtensionTable *nodes)
{
	char		host[256];
	Datum row[kNodeColumnCount];
	Datum previous[kNodeColumnCount];
	int64 beats = 0;
	ExtensionTableWrite write;

	if (gethostname(host, sizeof(host)) != 0)
		strlcpy(host, "unknown", sizeof(host));
	host[sizeof(host) - 1] = '\0';
	row[kNodeId] = Int32GetDatum(g_settings.node_id);
	row[kInstanceId] = UUIDPGetDatum(&state->instance_id);

	BeginExtensionTableWrite(nodes, &write);
	while (DeleteExtensionTableRowByKey(&write, row, previous))
		beats = Max(beats, DatumGetInt64(previous[kBeats]));

	row[kSystemIdentifier] = CStringGetTextDatum(
		psprintf(UINT64_FORMAT, GetSystemIdentifier()));
	row[kTimeline] = Int32GetDatum(static_cast<int32>(GetWALInsertionTimeLine()));
	row[kHost] = CStringGetTextDatum(host);
	row[kPort] = Int32GetDatum(PostPortNumber);
	row[kDataDirectory] = CStringGetTextDatum(DataDir);
	row[kStartedAt] = TimestampTzGetDatum(UnixMsToTimestampTz(state->started_unix_ms));
	row[kLastSeen] = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp()); /* now() */
	row[kBeats] = Int64GetDatum(beats + 1);
	if (NodesCarryClock(nodes))
		FillHeartbeatClock(row);
	InsertExtensionTableRow(&write, row);
	EndExtensionTableWrite(&write);
}

PeerBeat *
FindPeer(const char *instance_id)
{
	for (int i = 0; i < peer_count; i++)
		if (strcmp(peers[i].instance_id, instance_id) == 0)
			return &peers[i];
	return nullptr;
}

/*
 * Reads the other instances with our node_id and returns one that is
 * running (see kRunningWindowIntervals), or NULL; it stays valid until the
 * next call.
 */
const PeerBeat *
FindRunningPeer(SharedState *state, const ExtensionTable *nodes)
{
	int64		now_us = NowMonotonicUs();
	ExtensionTableScan scan;
	Datum row[kNodeColumnCount];

	for (int i = 0; i < peer_count; i++)
		peers[i].seen = false;
	BeginExtensionTableScan(nodes, GetActiveSnapshot(), &scan);
	while (NextExtensionTableRow(&scan, row))
	{
		if (DatumGetInt32(row[kNodeId]) != g_settings.node_id ||
			memcmp(DatumGetUUIDP(row[kInstanceId]), &state->instance_id, UUID_LEN) == 0)
			continue;

		char *instance_id = DatumGetCString(
			DirectFunctionCall1(uuid_out, row[kInstanceId]));
		int64 beats = DatumGetInt64(row[kBeats]);
		PeerBeat   *peer = FindPeer(instance_id);

		if (peer == nullptr)
		{
			if (peer_count == kMaxPeers)
				continue;
			/* First sight: a baseline, not yet evidence that it runs. */
			peer = &peers[peer_count++];
			strlcpy(peer->instance_id, instance_id, sizeof(peer->instance_id));
			peer->beats = beats;
			peer->advanced_at_us = 0;
		}
		else if (beats > peer->beats)
		{
			peer->beats = beats;
			peer->advanced_at_us = now_us;
		}
		snprintf(peer->description, sizeof(peer->description),
				 "instance %s on host %s port %d (timeline %d, system %s)", instance_id,
				 TextDatumGetCString(row[kHost]), DatumGetInt32(row[kPort]),
				 DatumGetInt32(row[kTimeline]),
				 TextDatumGetCString(row[kSystemIdentifier]));
		peer->seen = true;
	}
	EndExtensionTableScan(&scan);

	/* Forget rows that are gone, so the table may be cleaned up. */
	int			running = -1;
	int			kept = 0;

	for (int i = 0; i < peer_count; i++)
	{
		if (!peers[i].seen)
			continue;
		peers[kept] = peers[i];
		if (running < 0 && peers[kept].advanced_at_us != 0 &&
			now_us - peers[kept].advanced_at_us <= RunningWindowUs())
			running = kept;
		kept++;
	}
	peer_count = kept;
	return running < 0 ? nullptr : &peers[running];
}

/*
 * Publishes what this round found, and logs a collision once.  Whether a
 * collision stops generation is each session's own decision, by its
 * snowflake.on_node_collision, so a reload takes effect even when this
 * worker cannot run.
 */
void
PublishFinding(SharedState *state, const SplitBrainPeer *running_peer)
{
	bool		collision = running_peer != nullptr;
	bool was = (pg_atomic_read_u32(&state->registry_findings) & kFindingNodeCollision) != 0;
	bool any = false;
	/* Until it has watched a full running window it cannot tell a peer stopped. */
	bool warming_up = rounds_completed < kRunningWindowIntervals;

	/* Any registry's finding stops generation: the flag is their union. */
	SpinLockAcquire(&state->registry_mutex);
	if (collision || !warming_up)
		state->registries[my_slot].collision = collision;
	for (const RegistrySlot &slot : state->registries)
		any = any || (slot.phase != kRegistryFree && slot.collision);
	SpinLockRelease(&state->registry_mutex);

	if (collision)
	{
		SpinLockAcquire(&state->collision_mutex);
		strlcpy(state->collision_client, running_peer->client,
				sizeof(state->collision_client));
		strlcpy(state->collision_detail, running_peer->log,
				sizeof(state->collision_detail));
		state->collision_split_brain = running_peer->split_brain;
		SpinLockRelease(&state->collision_mutex);
	}
	if (any)
		pg_atomic_fetch_or_u32(&state->registry_findings, kFindingNodeCollision);
	else
		pg_atomic_fetch_and_u32(&state->registry_findings, ~kFindingNodeCollision);

	/* This worker has no client: its messages go to the server log only. */
	if (collision && !was)
		ereport(WARNING,
				(errmsg("snowflake node_id %d is also used by another running instance",
						g_settings.node_id),
				 errdetail("%s.", running_peer->log),
				 running_peer->split_brain ?
					 errhint("%s", kSplitBrainHint) :
					 errhint("Give each primary its own snowflake.node_id; until then "
							 "their IDs can collide.")));
	else if (!any && was)
		ereport(LOG,
				(errmsg("snowflake node_id %d is no longer used by another running instance",
						g_settings.node_id)));
}

/*
 * The running instance this round found with our node_id, or NULL: a peer
 * heartbeating in snowflake_nodes, else the old primary this server was
 * promoted from ("promoted_origin"), else a server promoted from this one.
 * Valid until the next call.
 */
const SplitBrainPeer *
RunningPeer(SharedState *state, const ExtensionTable *nodes,
			const SplitBrainPeer *promoted_origin)
{
	static SplitBrainPeer found;
	const PeerBeat *peer = FindRunningPeer(state, nodes);

	if (peer != nullptr)
	{
		found.split_brain = false;
		snprintf(found.client, sizeof(found.client),
				 "snowflake_nodes shows instance %s heartbeating", peer->instance_id);
		snprintf(found.log, sizeof(found.log), "snowflake_nodes shows %s heartbeating",
				 peer->description);
		return &found;
	}
	if (promoted_origin != nullptr && !ProbeReachesSelf(state))
	{
		found = *promoted_origin;
		return &found;
	}
	return FindPromotedWalsender(state, &found) ? &found : nullptr;
}

/*
 * Records why the registry cannot complete a round, or, if "completed",
 * that it just did, with "problem" "" or what cuts its view of the other
 * nodes (replication_check.hpp), and logs each change with "hint", the
 * fix.  While it cannot, the last finding stands: nothing shows the peer gone.
 */
void
SetRegistryProblem(SharedState *state, const char *problem, const char *hint,
				   bool completed = false)
{
	TimestampTz now = GetCurrentTimestamp();
	RegistrySlot *slot = &state->registries[my_slot];
	bool		changed;

	SpinLockAcquire(&state->registry_mutex);
	changed = strncmp(slot->problem, problem, sizeof(slot->problem) - 1) != 0;
	strlcpy(slot->problem, problem, sizeof(slot->problem));
	if (completed)
	{
		slot->last_round = now;
		slot->phase = kRegistryRunning;
	}
	SpinLockRelease(&state->registry_mutex);

	if (!changed)
		return;
	if (problem[0] != '\0' && completed)
		ereport(WARNING,
				(errmsg("snowflake node registry in database \"%s\": %s", my_database,
						problem),
				 errdetail("The heartbeats of other nodes no longer reach this node's "
						   "snowflake_nodes, or its own no longer reach theirs: node-id "
						   "collisions between them go undetected."),
				 errhint("%s", hint)));
	else if (problem[0] != '\0' && RegistryIsAutomatic())
		ereport(WARNING,
				(errmsg("snowflake node registry cannot run in database \"%s\": %s",
						my_database, problem),
				 errdetail("Until it runs, node-id collisions with this node go undetected "
						   "there, and the last finding stands."),
				 errhint("%s", hint)));
	else if (problem[0] != '\0')
		ereport(WARNING,
				(errmsg("snowflake node registry cannot run: %s", problem),
				 errdetail(
					 "Until it runs, node-id collisions with this node go undetected, "
					 "and the last finding stands."),
				 errhint("%s", hint)));
	else
		ereport(LOG, (errmsg("snowflake node registry completed a round")));
}

/* The hint of a failed round: the error logged before it says what failed. */
const char *const kRoundFailedHint =
	"Remove the cause named by the error logged just before this warning; the registry "
	"tries again every snowflake.registry_interval.";

/*
 * One round in its own transaction.  Returns false if the registry table
 * does not exist in this database; else *cut is NULL or what cuts the
 * table's replication, its fix in *cut_hint.  Only finding and opening the
 * table (catalog reads by OID) run as the superuser; the rest as the
 * table's owner, as VACUUM does.  An error's abort restores the identity.
 */
bool
RunRound(SharedState *state, const char **cut, const char **cut_hint)
{
	ExtensionTable nodes;
	Oid saved_user;
	int saved_context;

	/* Network I/O, each wait bounded (split_brain.hpp): outside the transaction. */
	SplitBrainPeer origin;
	bool		origin_runs = ProbeOldPrimary(state, &origin);

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	/* A database not yet updated to 1.6 has no clock columns: its heartbeats carry none. */
	const ExtensionTableShape *shape = OutdatedExtensionVersion() != nullptr ?
		&kNodesShapeBefore16 :
		&kNodesShape;

	if (!OpenExtensionTable(SnowflakeExtensionOid(), shape, RowExclusiveLock, &nodes))
	{
		PopActiveSnapshot();
		CommitTransactionCommand();
		return false;
	}

	/*
	 * At each start of the server (this worker's first round), a database
	 * still at an older version of the extension is told in the log, as
	 * each session is at its first ID.
	 */
	WarnOnceIfExtensionOutdated();

	GetUserIdAndSecContext(&saved_user, &saved_context);
	SetUserIdAndSecContext(nodes.rel->rd_rel->relowner,
						   saved_context | SECURITY_LOCAL_USERID_CHANGE |
							   SECURITY_RESTRICTED_OPERATION);
	Heartbeat(state, &nodes);
	CommandCounterIncrement();
	UpdateActiveSnapshotCommandId();
	PublishFinding(state, RunningPeer(state, &nodes, origin_runs ? &origin : nullptr));
	CompareClocks(state, &nodes, my_slot, my_database);
	*cut = CheckNodesReplication(nodes.rel, cut_hint);
	CloseExtensionTable(&nodes);
	PopActiveSnapshot();
	CommitTransactionCommand();
	SetUserIdAndSecContext(saved_user, saved_context);
	rounds_completed++;
	return true;
}

/* A setting no database or role default can change for this process. */
void
Pin(const char *name, const char *value)
{
	SetConfigOption(name, value, PGC_SUSET, PGC_S_OVERRIDE);
}

/* The registry interval, at least 1 s: a lock the owner queues holds no round forever. */
void
PinLockTimeout(void)
{
	char value[32];

	snprintf(value, sizeof(value), "%d", Max(g_settings.registry_interval_ms, 1000));
	Pin("lock_timeout", value);
}

/*
 * No ALTER DATABASE ... SET of the database's owner may turn detection off
 * (README.md); the path is fixed because a trigger on the table may call
 * functions.
 */
void
PinSettings(void)
{
	Pin("search_path", "pg_catalog, pg_temp");
	Pin("default_transaction_read_only", "off");
	Pin("statement_timeout", "0");
	PinLockTimeout();
	Pin("idle_in_transaction_session_timeout", "0");
	Pin("exit_on_error", "off");
#if PG_VERSION_NUM >= 170000
	Pin("transaction_timeout", "0");
#endif
}

}							/* namespace */

/* A fresh random (version 4) UUID for this instance. */
static void
NewInstanceId(pg_uuid_t *id)
{
	if (!pg_strong_random(id->data, UUID_LEN))
		ereport(FATAL,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not generate a random snowflake instance id")));
	id->data[6] = (id->data[6] & 0x0f) | 0x40;	/* version 4 */
	id->data[8] = (id->data[8] & 0x3f) | 0x80;	/* RFC 4122 variant */
}

void
InitRegistryState(SharedState *state)
{
	pg_atomic_init_u32(&state->registry_findings, 0);
	SpinLockInit(&state->collision_mutex);
	state->collision_client[0] = '\0';
	state->collision_detail[0] = '\0';
	state->collision_split_brain = false;
	InitRegistrySlots(state);
	NewInstanceId(&state->instance_id);
}

/*
 * The client learns only the peer's instance id, which every role may read
 * in snowflake_nodes; where the peer runs (host, port, system identifier),
 * which only superusers and pg_monitor may read there, goes to the server
 * log alone.
 */
void
ReportGenerationBlocked(SharedState *state)
{
	char		client[sizeof(state->collision_client)];
	char		detail[sizeof(state->collision_detail)];
	bool		split_brain;

	SpinLockAcquire(&state->collision_mutex);
	strlcpy(client, state->collision_client, sizeof(client));
	split_brain = state->collision_split_brain;
	strlcpy(detail, state->collision_detail, sizeof(detail));
	SpinLockRelease(&state->collision_mutex);
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("snowflake node_id %d is also used by another running instance",
					g_settings.node_id),
			 errdetail("%s; IDs from the two could collide, and "
					   "snowflake.on_node_collision is \"error\".",
					   client),
			 errdetail_log("%s; IDs from the two could collide, and "
						   "snowflake.on_node_collision is \"error\".",
						   detail),
			 split_brain ? errhint("%s", kSplitBrainHint) :
						   errhint("Give each primary its own snowflake.node_id.")));
}

/*
 * At the exit of an automatic registry: its slot says it stopped (and, if
 * nothing explains why, that it exited), and the launcher is woken to
 * decide: free the slot, or start a registry there again.
 */
static void
ReleaseRegistrySlot(int code, Datum arg)
{
	(void) code;
	(void) arg;

	SharedState *state = RequireSharedState();
	RegistrySlot *slot = &state->registries[my_slot];

	SpinLockAcquire(&state->registry_mutex);
	if (slot->pid == MyProcPid)
	{
		slot->pid = 0;
		slot->phase = kRegistryStopped;
		if (!slot->absent && !slot->dropping && slot->problem[0] == '\0')
			strlcpy(slot->problem,
					"its registry exited (the server log says why); the launcher starts "
					"it again within snowflake.registry_interval",
					sizeof(slot->problem));
	}
	SpinLockRelease(&state->registry_mutex);
	WakeRegistryLauncher(state);
}

/*
 * Takes the slot the launcher reserved for "database" (its index is in
 * bgw_extra); false if it is not ours to take.
 */
static bool
ClaimLaunchedSlot(SharedState *state, Oid database)
{
	bool claimed;

	memcpy(&my_slot, MyBgworkerEntry->bgw_extra, sizeof(my_slot));
	if (my_slot < 0 || my_slot >= kRegistrySlotCount)
		return false;

	RegistrySlot *slot = &state->registries[my_slot];

	SpinLockAcquire(&state->registry_mutex);
	claimed = slot->database == database && slot->phase == kRegistryStarting &&
		slot->pid == 0;
	if (claimed)
		slot->pid = MyProcPid;
	SpinLockRelease(&state->registry_mutex);
	return claimed;
}

/* The named registry keeps slot 0 for the server's whole run. */
static void
ClaimNamedSlot(SharedState *state)
{
	RegistrySlot *slot = &state->registries[0];

	SpinLockAcquire(&state->registry_mutex);
	slot->database = MyDatabaseId;
	slot->pid = MyProcPid;
	slot->started_at = GetCurrentTimestamp();
	if (slot->phase == kRegistryFree)
		slot->phase = kRegistryStarting;
	SpinLockRelease(&state->registry_mutex);
}

/* An automatic registry found no snowflake_nodes: a normal database. */
static void
ExitAsAbsent(SharedState *state)
{
	SpinLockAcquire(&state->registry_mutex);
	state->registries[my_slot].absent = true;
	state->registries[my_slot].collision = false;
	state->registries[my_slot].clock_skewed = false;
	state->registries[my_slot].problem[0] = '\0';
	SpinLockRelease(&state->registry_mutex);
	RecomputeRegistryFindings(state);
	proc_exit(0);
}

/* Connects: by OID to the launcher's database, or by name in named mode. */
static void
ConnectRegistry(SharedState *state, Oid database)
{
	if (OidIsValid(database))
	{
		if (!ClaimLaunchedSlot(state, database))
			proc_exit(0);
		before_shmem_exit(ReleaseRegistrySlot, 0);
		/* InitPostgres waits for a lock on the database: bounded too. */
		PinLockTimeout();
		BackgroundWorkerInitializeConnectionByOid(database, InvalidOid,
												  BGWORKER_BYPASS_ALLOWCONN);
		return;
	}

	my_slot = 0;
	PinLockTimeout();
	/* An earlier worker of this run exited before it completed a round. */
	if (pg_atomic_fetch_add_u32(&state->registry_starts, 1) > 0 &&
		state->registries[0].last_round == 0)
		SetRegistryProblem(
			state,
			psprintf("could not connect to database \"%s\" "
					 "(snowflake.database); see the server log",
					 g_settings.registry_database),
			psprintf("Create database \"%s\" and the extension in it, or set "
					 "snowflake.database to a database that has the "
					 "extension, or to '' to register every database that has "
					 "it, and restart the server.",
					 g_settings.registry_database));
	BackgroundWorkerInitializeConnection(g_settings.registry_database, nullptr, 0);
	ClaimNamedSlot(state);
}

/* The registry's entry point: arg is the database's OID, or 0 in named mode. */
void
snowflake_registry_main(Datum arg)
{
	InstallWorkerSignalHandlers();
	BackgroundWorkerUnblockSignals();

	SharedState *state = RequireSharedState();
	bool automatic = OidIsValid(DatumGetObjectId(arg));

	ConnectRegistry(state, DatumGetObjectId(arg));
	pgstat_report_appname("snowflake registry");
	PinSettings();

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	const char *name = get_database_name(MyDatabaseId);

	strlcpy(my_database, name != nullptr ? name : "?", sizeof(my_database));
	CommitTransactionCommand();

	MemoryContext round_context = AllocSetContextCreate(TopMemoryContext,
														"snowflake registry round",
														ALLOCSET_DEFAULT_SIZES);

	for (bool first = true;; first = false)
	{
		/* The first round at once: a probe answers the launcher quickly. */
		if (!first)
			WaitForWorkOrExit(g_settings.registry_interval_ms);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			PinLockTimeout(); /* snowflake.registry_interval may have changed */
		}

		MemoryContext previous = MemoryContextSwitchTo(round_context);
		volatile bool absent = false;

		PG_TRY();
		{
			const char *cut = nullptr;
			const char *cut_hint = "";
			bool		ran = RunRound(state, &cut, &cut_hint);

			/* The transaction's end left TopMemoryContext current. */
			MemoryContextSwitchTo(round_context);
			if (ran)
				SetRegistryProblem(state, cut != nullptr ? cut : "", cut_hint, true);
			else if (automatic)
				absent = true;
			else
				SetRegistryProblem(
					state,
					psprintf("database \"%s\" (snowflake.database) has no "
							 "snowflake_nodes table: the snowflake extension, "
							 "version 1.2 or later, is not installed there",
							 g_settings.registry_database),
					psprintf("Create the extension in database \"%s\", or set "
							 "snowflake.database to a database that has it, or to '' to "
							 "register every database that has it, and restart the server.",
							 g_settings.registry_database));
		}
		PG_CATCH();
		{
			/* Log it and try again next round; the transaction is undone. */
			MemoryContextSwitchTo(round_context);

			ErrorData  *error = CopyErrorData();

			EmitErrorReport();
			FlushErrorState();
			AbortCurrentTransaction();
			SetRegistryProblem(state, error->message, kRoundFailedHint);
		}
		PG_END_TRY();
		MemoryContextSwitchTo(previous);
		MemoryContextReset(round_context);
		if (absent)
			ExitAsAbsent(state);
	}
}
