/*
 * clock_skew.cpp
 *	  Clocks compared across nodes through their registry heartbeats
 *	  (clock_skew.hpp).
 *
 * Runs in a registry worker's round, as the owner of snowflake_nodes,
 * after the heartbeat; resolves no name.
 */
extern "C"
{
#include "postgres.h"

#include "catalog/pg_type.h"
#include "storage/spin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"
}

#include "core/clock_skew.hpp"
#include "pg/clock.hpp"
#include "pg/clock_watch.hpp"
#include "pg/registry/clock_skew.hpp"
#include "pg/registry/nodes_table.hpp"
#include "pg/registry/registry_slots.hpp"
#include "pg/settings.hpp"
#include "pg/timestamps.hpp"

namespace {

/* c.h's Abs() is gone from PostgreSQL 17. */
int64
Magnitude(int64 value)
{
	return value < 0 ? -value : value;
}

constexpr int kMaxClockPeers = 64;

/* Another instance's heartbeats, as this worker has seen them. */
struct ClockPeer
{
	pg_uuid_t instance;
	int32 node_id;
	int64 clock_ms;      /* its row's clock when last seen */
	int64 changed_at_us; /* monotonic time its clock last changed; 0: never */
	int64 peer_ahead_ms; /* W - R when its clock last changed */
	int64 self_ahead_ms; /* what its row says of ours; 0: nothing */
	int64 reported_ms;   /* the disagreement its WARNING named; 0: none stands */
	bool seen;           /* in the current round */
};

ClockPeer peers[kMaxClockPeers];
int peer_count = 0;

/* Whether the peer's clock changed within the running window before "now_us". */
bool
ChangedRecently(const ClockPeer &peer, int64 now_us)
{
	return peer.changed_at_us != 0 && now_us - peer.changed_at_us <= RunningWindowUs();
}

ClockPeer *
FindOrAddPeer(const pg_uuid_t *instance, bool *added)
{
	*added = false;
	for (int i = 0; i < peer_count; i++)
		if (memcmp(&peers[i].instance, instance, UUID_LEN) == 0)
			return &peers[i];
	if (peer_count == kMaxClockPeers)
		return nullptr;
	ClockPeer *peer = &peers[peer_count++];

	memset(peer, 0, sizeof(*peer));
	memcpy(&peer->instance, instance, UUID_LEN);
	*added = true;
	return peer;
}

/* What the row's lists say of this instance's clock: at least so far ahead, or 0. */
int64
SelfAheadIn(const Datum *row, const pg_uuid_t *self)
{
	ArrayType *instances = DatumGetArrayTypeP(row[kClocksAhead]);
	ArrayType *amounts = DatumGetArrayTypeP(row[kClocksAheadMs]);
	Datum *ids;
	Datum *ms;
	bool *id_nulls;
	bool *ms_nulls;
	int id_count;
	int ms_count;

	deconstruct_array(instances, UUIDOID, UUID_LEN, false, TYPALIGN_CHAR, &ids, &id_nulls,
					  &id_count);
	deconstruct_array(amounts, INT8OID, sizeof(int64), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
					  &ms, &ms_nulls, &ms_count);
	for (int i = 0; i < id_count && i < ms_count; i++)
		if (!id_nulls[i] && !ms_nulls[i] &&
			memcmp(DatumGetUUIDP(ids[i]), self, UUID_LEN) == 0)
			return DatumGetInt64(ms[i]);
	return 0;
}

char *
InstanceText(const pg_uuid_t *instance)
{
	return DatumGetCString(DirectFunctionCall1(uuid_out, UUIDPGetDatum(instance)));
}

/*
 * Logs a peer that starts or stops disagreeing beyond the threshold, or
 * that stopped heartbeating ("running" false) while it disagreed.
 */
void
ReportChange(ClockPeer *peer, bool running, int64 disagreement, const char *database)
{
	int64 size = Magnitude(disagreement);
	bool beyond = size > g_settings.clock_skew_threshold_ms;

	if (!running && peer->reported_ms != 0)
		ereport(LOG,
				(errmsg("snowflake: instance %s of node %d no longer heartbeats; its clock "
						"is no longer compared",
						InstanceText(&peer->instance), peer->node_id)));
	else if (beyond && peer->reported_ms == 0)
		ereport(
			WARNING,
			(errmsg("snowflake: this node's clock is at least " INT64_FORMAT
					" ms %s the clock of node %d",
					size, disagreement > 0 ? "ahead of" : "behind", peer->node_id),
			 errdetail("Instance %s of node %d heartbeats in snowflake_nodes of database "
					   "\"%s\"; %s.  IDs of the two nodes are ordered by time only as "
					   "far as their clocks agree (snowflake.clock_skew_threshold is "
					   "%d ms).",
					   InstanceText(&peer->instance), peer->node_id, database,
					   disagreement > 0 ?
						   "its heartbeat says so, from this node's heartbeats it read" :
						   "its heartbeat's clock, read here, proves it",
					   g_settings.clock_skew_threshold_ms),
			 errhint("Find which clock is wrong by comparing each node with a trusted "
					 "time source (chronyc tracking, timedatectl timesync-status), and "
					 "repair that node's time synchronization.  With "
					 "snowflake.on_clock_skew = 'refuse', a node whose clock disagrees "
					 "with most of its peers issues no IDs meanwhile.")));
	else if (!beyond && peer->reported_ms != 0)
		ereport(LOG,
				(errmsg("snowflake: this node's clock agrees with the clock of node %d "
						"again, within snowflake.clock_skew_threshold",
						peer->node_id)));
	peer->reported_ms = beyond ? disagreement : 0;
}

/* A one-dimensional array of "count" datums. */
Datum
ArrayDatum(Datum *elements, int count, Oid type, int length, bool by_value, char align)
{
	return PointerGetDatum(construct_array(elements, count, type, length, by_value, align));
}

/*
 * Copies the running registry slot with the largest disagreement that
 * compared peers ("skewed_only": that found this node skewed); false if none.
 */
bool
LargestSkewSlot(SharedState *state, bool skewed_only, RegistrySlot *out)
{
	int64 largest_size = -1;

	SpinLockAcquire(&state->registry_mutex);
	for (const RegistrySlot &slot : state->registries)
	{
		if (slot.phase != kRegistryRunning ||
			Magnitude(slot.clock_skew_ms) <= largest_size ||
			(skewed_only ? !slot.clock_skewed : slot.absent || slot.clock_peers == 0))
			continue;
		largest_size = Magnitude(slot.clock_skew_ms);
		*out = slot;
	}
	SpinLockRelease(&state->registry_mutex);
	return largest_size >= 0;
}

} // namespace

void
FillHeartbeatClock(Datum *row)
{
	Datum *ids = static_cast<Datum *>(palloc(sizeof(Datum) * Max(peer_count, 1)));
	Datum *ms = static_cast<Datum *>(palloc(sizeof(Datum) * Max(peer_count, 1)));
	int count = 0;
	int64 now_us = NowMonotonicUs();

	/* Only running peers: a stopped one's last reading proves nothing now. */
	for (int i = 0; i < peer_count; i++)
		if (ChangedRecently(peers[i], now_us) &&
			peers[i].peer_ahead_ms > g_settings.clock_skew_threshold_ms)
		{
			ids[count] = UUIDPGetDatum(&peers[i].instance);
			ms[count] = Int64GetDatum(peers[i].peer_ahead_ms);
			count++;
		}
	row[kClocksAhead] = ArrayDatum(ids, count, UUIDOID, UUID_LEN, false, TYPALIGN_CHAR);
	row[kClocksAheadMs] = ArrayDatum(ms, count, INT8OID, sizeof(int64), FLOAT8PASSBYVAL,
									 TYPALIGN_DOUBLE);
	/* Read last, just before the row is written: it bounds the time of writing. */
	row[kClock] = TimestampTzGetDatum(UnixMsToTimestampTz(PeekTrustedNowUnixMs()));
}

void
CompareClocks(SharedState *state, const ExtensionTable *nodes, int slot_index,
			  const char *database)
{
	snowflake::PeerClockReading readings[kMaxClockPeers];
	int32 node_of[kMaxClockPeers];
	int count = 0;
	int64 now_us = NowMonotonicUs();

	for (int i = 0; i < peer_count; i++)
		peers[i].seen = false;
	if (NodesCarryClock(nodes))
	{
		ExtensionTableScan scan;
		Datum row[kNodeColumnCount];

		BeginExtensionTableScan(nodes, GetActiveSnapshot(), &scan);
		while (NextExtensionTableRow(&scan, row))
		{
			const pg_uuid_t *instance = DatumGetUUIDP(row[kInstanceId]);
			TimestampTz clock = DatumGetTimestampTz(row[kClock]);
			bool added;

			/* Our own row, and rows written before 1.6 (-infinity): no clock to compare. */
			if (memcmp(instance, &state->instance_id, UUID_LEN) == 0 ||
				TIMESTAMP_NOT_FINITE(clock))
				continue;

			ClockPeer *peer = FindOrAddPeer(instance, &added);

			if (peer == nullptr)
				continue;
			/* Our clock after reading the row: the row was written before it. */
			int64 read_ms = PeekTrustedNowUnixMs();
			int64 clock_ms = TimestampTzToUnixMs(clock);

			peer->seen = true;
			peer->node_id = DatumGetInt32(row[kNodeId]);
			/* The first sight is a baseline: a stopped instance's row never changes. */
			if (!added && clock_ms != peer->clock_ms)
			{
				peer->changed_at_us = now_us;
				peer->peer_ahead_ms = clock_ms - read_ms;
				peer->self_ahead_ms = SelfAheadIn(row, &state->instance_id);
			}
			peer->clock_ms = clock_ms;
		}
		EndExtensionTableScan(&scan);
	}

	/* Forget instances gone from the table; compare the running ones. */
	int kept = 0;

	for (int i = 0; i < peer_count; i++)
	{
		ClockPeer *peer = &peers[i];
		bool running = peer->seen && ChangedRecently(*peer, now_us);
		int64 disagreement = 0;

		if (running && count < kMaxClockPeers)
		{
			readings[count] = {peer->peer_ahead_ms, peer->self_ahead_ms};
			node_of[count] = peer->node_id;
			disagreement = snowflake::ProvenDisagreementMs(readings[count]);
			count++;
		}
		ReportChange(peer, running, disagreement, database);
		if (peer->seen)
			peers[kept++] = *peer;
	}
	peer_count = kept;

	snowflake::ClockSkewSummary summary =
		snowflake::SummarizeClockSkew(readings, count, g_settings.clock_skew_threshold_ms);
	int32 worst_node = 0;

	for (int i = 0; i < count; i++)
		if (snowflake::ProvenDisagreementMs(readings[i]) == summary.largest_ms)
			worst_node = node_of[i];

	SpinLockAcquire(&state->registry_mutex);
	RegistrySlot *slot = &state->registries[slot_index];

	slot->clock_peers = summary.peers;
	slot->clock_skewed_peers = summary.skewed_peers;
	slot->clock_skew_ms = summary.largest_ms;
	slot->clock_skew_node = worst_node;
	slot->clock_skewed = summary.skewed;
	SpinLockRelease(&state->registry_mutex);
	RecomputeRegistryFindings(state);
}

void
ClockSkewStatus(SharedState *state, int32 *peers_out, int32 *skewed_peers,
				int64 *largest_ms, bool *compared)
{
	RegistrySlot slot{};

	*compared = LargestSkewSlot(state, false, &slot);
	*peers_out = slot.clock_peers;
	*skewed_peers = slot.clock_skewed_peers;
	*largest_ms = slot.clock_skew_ms;
}

void
ReportClockSkewRefusal(SharedState *state)
{
	RegistrySlot slot{};

	(void) LargestSkewSlot(state, true, &slot);
	ereport(
		ERROR,
		(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
		 errmsg("snowflake refuses IDs: this node's clock disagrees with its peers' by "
				"more than snowflake.clock_skew_threshold (%d ms)",
				g_settings.clock_skew_threshold_ms),
		 errdetail("It disagrees with %d of the %d running nodes it compared, with node %d "
				   "by at least " INT64_FORMAT " ms (this node's clock %s), and "
				   "snowflake.on_clock_skew is \"refuse\".",
				   slot.clock_skewed_peers, slot.clock_peers, slot.clock_skew_node,
				   Magnitude(slot.clock_skew_ms),
				   slot.clock_skew_ms > 0 ? "ahead" : "behind"),
		 errhint("Find which clock is wrong by comparing each node with a trusted time "
				 "source, and repair its time synchronization: IDs resume at the next "
				 "registry round after the clocks agree.  Or set snowflake.on_clock_skew "
				 "= 'warn' and reload to issue IDs meanwhile.")));
}
