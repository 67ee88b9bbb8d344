/*
 * node_registry.cpp
 *	  The "snowflake registry" background worker: heartbeats in
 *	  snowflake_nodes and node-id collision detection.
 *
 * Each round runs in its own transaction.  An error in a round (say, the
 * extension was dropped) is logged and the next round starts afresh; the
 * worker itself keeps no state across rounds but the beat counts it saw.
 */
extern "C"
{
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"		/* GetSystemIdentifier, GetWALInsertionTimeLine */
#include "catalog/pg_type.h"	/* type OIDs */
#include "executor/spi.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "postmaster/postmaster.h"	/* PostPortNumber */
#include "storage/latch.h"
#include "storage/spin.h"
#include "tcop/tcopprot.h"	/* die */
#include "utils/backend_status.h"	/* pgstat_report_appname */
#include "utils/builtins.h"	/* quote_identifier, pg_strtoint64, text datums */
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"
#include "utils/wait_event.h"
}

#include <unistd.h>

#include "pg/clock.hpp"
#include "pg/registry/node_registry.hpp"
#include "pg/settings.hpp"
#include "pg/timestamps.hpp"


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

/*
 * A peer counts as running while its count grew within this many of our
 * intervals: heartbeats arrive through replication, in bursts.
 */
constexpr int kRunningWindowIntervals = 3;

PeerBeat	peers[kMaxPeers];
int			peer_count = 0;

/*
 * The schema of the extension in this database, quoted; NULL if the
 * extension, or its registry table (version 1.2 on), is absent.  Only the
 * lookup of the extension's schema is SQL; the rest reads the caches.
 */
const char *
ExtensionSchema(void)
{
	bool		isnull;
	int			ret = SPI_execute("SELECT e.extnamespace FROM pg_catalog.pg_extension AS e "
								  "WHERE e.extname OPERATOR(pg_catalog.=) 'snowflake'",
								  true, 1);

	if (ret != SPI_OK_SELECT || SPI_processed == 0)
		return nullptr;

	Oid			schema = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
														SPI_tuptable->tupdesc, 1, &isnull));

	if (isnull || !OidIsValid(get_relname_relid("snowflake_nodes", schema)))
		return nullptr;
	return quote_identifier(get_namespace_name(schema));
}

/* Rewrites this instance's row, adding one beat. */
void
Heartbeat(SharedState *state, const char *schema)
{
	char		host[256];
	Oid			types[8] = {INT4OID, UUIDOID, TEXTOID, INT4OID, TEXTOID, INT4OID,
							TEXTOID, TIMESTAMPTZOID};
	Datum		values[8];

	if (gethostname(host, sizeof(host)) != 0)
		strlcpy(host, "unknown", sizeof(host));
	host[sizeof(host) - 1] = '\0';
	values[0] = Int32GetDatum(g_settings.node_id);
	values[1] = UUIDPGetDatum(&state->instance_id);
	values[2] = CStringGetTextDatum(psprintf(UINT64_FORMAT, GetSystemIdentifier()));
	values[3] = Int32GetDatum(static_cast<int32>(GetWALInsertionTimeLine()));
	values[4] = CStringGetTextDatum(host);
	values[5] = Int32GetDatum(PostPortNumber);
	values[6] = CStringGetTextDatum(DataDir);
	values[7] = TimestampTzGetDatum(UnixMsToTimestampTz(state->started_unix_ms));

	/*
	 * Delete and insert, not update: replication applies an INSERT even on
	 * a peer that missed the row (say, it was written before the peer
	 * subscribed), where an UPDATE would be skipped as a conflict forever.
	 * Every function and operator is qualified (see RunRound).
	 */
	char	   *sql = psprintf(
		"WITH previous AS (DELETE FROM %1$s.snowflake_nodes "
		"WHERE node_id OPERATOR(pg_catalog.=) $1 "
		"AND instance_id OPERATOR(pg_catalog.=) $2 RETURNING beats) "
		"INSERT INTO %1$s.snowflake_nodes (node_id, instance_id, system_identifier, "
		"timeline, host, port, data_directory, started_at, last_seen, beats) "
		"VALUES ($1, $2, $3, $4, $5, $6, $7, $8, pg_catalog.now(), "
		"COALESCE((SELECT pg_catalog.max(beats) FROM previous), 0) "
		"OPERATOR(pg_catalog.+) 1)", schema);

	if (SPI_execute_with_args(sql, 8, types, values, nullptr, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not record this instance in snowflake_nodes");
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
FindRunningPeer(SharedState *state, const char *schema)
{
	Oid			types[2] = {INT4OID, UUIDOID};
	Datum		values[2] = {Int32GetDatum(g_settings.node_id),
							 UUIDPGetDatum(&state->instance_id)};
	char	   *sql = psprintf("SELECT instance_id::pg_catalog.text, beats, host, port, timeline, "
							   "system_identifier FROM %s.snowflake_nodes "
							   "WHERE node_id OPERATOR(pg_catalog.=) $1 "
							   "AND instance_id OPERATOR(pg_catalog.<>) $2",
							   schema);
	int64		now_us = NowMonotonicUs();
	int64		window_us = int64{kRunningWindowIntervals} * g_settings.registry_interval_ms * 1000;

	if (SPI_execute_with_args(sql, 2, types, values, nullptr, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read snowflake_nodes");

	for (int i = 0; i < peer_count; i++)
		peers[i].seen = false;
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		HeapTuple	tuple = SPI_tuptable->vals[row];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		char	   *instance_id = SPI_getvalue(tuple, desc, 1);
		int64		beats = pg_strtoint64(SPI_getvalue(tuple, desc, 2));
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
				 "instance %s on host %s port %s (timeline %s, system %s)",
				 instance_id, SPI_getvalue(tuple, desc, 3), SPI_getvalue(tuple, desc, 4),
				 SPI_getvalue(tuple, desc, 5), SPI_getvalue(tuple, desc, 6));
		peer->seen = true;
	}

	/* Forget rows that are gone, so the table may be cleaned up. */
	int			running = -1;
	int			kept = 0;

	for (int i = 0; i < peer_count; i++)
	{
		if (!peers[i].seen)
			continue;
		peers[kept] = peers[i];
		if (running < 0 && peers[kept].advanced_at_us != 0 &&
			now_us - peers[kept].advanced_at_us <= window_us)
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
PublishFinding(SharedState *state, const PeerBeat *running_peer)
{
	bool		collision = running_peer != nullptr;
	bool		was = pg_atomic_read_u32(&state->node_collision) != 0;

	SpinLockAcquire(&state->collision_mutex);
	strlcpy(state->collision_instance, collision ? running_peer->instance_id : "",
			sizeof(state->collision_instance));
	strlcpy(state->collision_detail, collision ? running_peer->description : "",
			sizeof(state->collision_detail));
	SpinLockRelease(&state->collision_mutex);
	pg_atomic_write_u32(&state->node_collision, collision ? 1 : 0);

	/* This worker has no client: its messages go to the server log only. */
	if (collision && !was)
		ereport(WARNING,
				(errmsg("snowflake node_id %d is also used by another running instance",
						g_settings.node_id),
				 errdetail("snowflake_nodes shows %s heartbeating.",
						   running_peer->description),
				 errhint("Give each primary its own snowflake.node_id; until then their "
						 "IDs can collide.")));
	else if (!collision && was)
		ereport(LOG,
				(errmsg("snowflake node_id %d is no longer used by another running instance",
						g_settings.node_id)));
}

/*
 * Records why the registry cannot complete a round, or ("" for "problem")
 * that it just did, and logs each change.  While it cannot, the last
 * finding stands: a collision it saw keeps stopping generation under
 * snowflake.on_node_collision = error, since nothing shows the peer gone.
 */
void
SetRegistryProblem(SharedState *state, const char *problem)
{
	TimestampTz now = GetCurrentTimestamp();
	bool		changed;

	SpinLockAcquire(&state->collision_mutex);
	changed = strncmp(state->registry_problem, problem,
					  sizeof(state->registry_problem) - 1) != 0;
	strlcpy(state->registry_problem, problem, sizeof(state->registry_problem));
	if (problem[0] == '\0')
		state->registry_last_round = now;
	SpinLockRelease(&state->collision_mutex);

	if (!changed)
		return;
	if (problem[0] != '\0')
		ereport(WARNING,
				(errmsg("snowflake node registry cannot run: %s", problem),
				 errdetail("Until it runs, node-id collisions with this node go undetected, "
						   "and the last finding stands."),
				 errhint("snowflake_status() shows the registry's state.")));
	else
		ereport(LOG, (errmsg("snowflake node registry completed a round")));
}

/*
 * One round in its own transaction.  Returns false if the registry table
 * does not exist in this database.
 */
bool
RunRound(SharedState *state)
{
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	SPI_connect();
	PushActiveSnapshot(GetTransactionSnapshot());

	const char *schema = ExtensionSchema();

	if (schema != nullptr)
	{
		Heartbeat(state, schema);
		CommandCounterIncrement();
		PublishFinding(state, FindRunningPeer(state, schema));
	}

	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	return schema != nullptr;
}

/*
 * The worker runs as a superuser in a database that others may own, so its
 * statements must not reach objects those others can create: the
 * search_path is fixed (whatever ALTER DATABASE or ALTER ROLE set), and
 * every function and operator in them is qualified, since an operator in a
 * later schema that matches the argument types better would still win.
 */
void
PinSearchPath(void)
{
	SetConfigOption("search_path", "pg_catalog, pg_temp", PGC_SUSET, PGC_S_OVERRIDE);
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
	pg_atomic_init_u32(&state->node_collision, 0);
	SpinLockInit(&state->collision_mutex);
	state->collision_instance[0] = '\0';
	state->collision_detail[0] = '\0';
	state->registry_last_round = 0;
	state->registry_problem[0] = '\0';
	pg_atomic_init_u32(&state->registry_starts, 0);
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
	char		instance[sizeof(state->collision_instance)];
	char		detail[sizeof(state->collision_detail)];

	SpinLockAcquire(&state->collision_mutex);
	strlcpy(instance, state->collision_instance, sizeof(instance));
	strlcpy(detail, state->collision_detail, sizeof(detail));
	SpinLockRelease(&state->collision_mutex);
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("snowflake node_id %d is also used by another running instance",
					g_settings.node_id),
			 errdetail("snowflake_nodes shows instance %s heartbeating; IDs from the two "
					   "could collide, and snowflake.on_node_collision is \"error\".",
					   instance),
			 errdetail_log("snowflake_nodes shows %s heartbeating; IDs from the two could "
						   "collide, and snowflake.on_node_collision is \"error\".",
						   detail),
			 errhint("Give each primary its own snowflake.node_id.")));
}

void
snowflake_registry_main(Datum arg)
{
	(void) arg;
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	SharedState *state = RequireSharedState();

	/* An earlier worker of this run exited before it completed a round. */
	if (pg_atomic_fetch_add_u32(&state->registry_starts, 1) > 0 &&
		state->registry_last_round == 0)
		SetRegistryProblem(state, psprintf("could not connect to database \"%s\" "
										   "(snowflake.database); see the server log",
										   g_settings.registry_database));
	BackgroundWorkerInitializeConnection(g_settings.registry_database, nullptr, 0);
	pgstat_report_appname("snowflake registry");
	PinSearchPath();

	MemoryContext round_context = AllocSetContextCreate(TopMemoryContext,
														"snowflake registry round",
														ALLOCSET_DEFAULT_SIZES);

	for (;;)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 g_settings.registry_interval_ms, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}

		MemoryContext previous = MemoryContextSwitchTo(round_context);

		PG_TRY();
		{
			bool		ran = RunRound(state);

			/* The transaction's end left TopMemoryContext current. */
			MemoryContextSwitchTo(round_context);
			if (ran)
				SetRegistryProblem(state, "");
			else
				SetRegistryProblem(state,
								   psprintf("database \"%s\" (snowflake.database) has no "
											"snowflake_nodes table: the snowflake extension, "
											"version 1.2 or later, is not installed there",
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
			SetRegistryProblem(state, error->message);
		}
		PG_END_TRY();
		MemoryContextSwitchTo(previous);
		MemoryContextReset(round_context);
	}
}
