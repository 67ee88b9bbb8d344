/*
 * nodes_table.hpp
 *	  The shape of snowflake_nodes, as each version's script created it.
 *
 * 1.2 to 1.3 have the first ten columns; 1.6 adds the writer's clock and
 * the instances it found ahead of it (registry/clock_skew.hpp).  A
 * database not yet updated keeps the older shape, and its heartbeats carry
 * no clock.
 */
#ifndef SNOWFLAKE_PG_REGISTRY_NODES_TABLE_HPP
#define SNOWFLAKE_PG_REGISTRY_NODES_TABLE_HPP

extern "C"
{
#include "postgres.h"

#include "catalog/pg_type.h" /* type OIDs */
}

#include "pg/extension_table.hpp"
#include "pg/settings.hpp"

enum NodeColumn
{
	kNodeId,
	kInstanceId,
	kSystemIdentifier,
	kTimeline,
	kHost,
	kPort,
	kDataDirectory,
	kStartedAt,
	kLastSeen,
	kBeats,
	kNodeColumnsBefore16,
	kClock = kNodeColumnsBefore16,
	kClocksAhead,
	kClocksAheadMs,
	kNodeColumnCount,
};

inline const ExtensionColumn kNodeColumns[kNodeColumnCount] = {
	{"node_id", INT4OID},
	{"instance_id", UUIDOID},
	{"system_identifier", TEXTOID},
	{"timeline", INT4OID},
	{"host", TEXTOID},
	{"port", INT4OID},
	{"data_directory", TEXTOID},
	{"started_at", TIMESTAMPTZOID},
	{"last_seen", TIMESTAMPTZOID},
	{"beats", INT8OID},
	{"clock", TIMESTAMPTZOID},
	{"clocks_ahead", UUIDARRAYOID},
	{"clocks_ahead_ms", INT8ARRAYOID},
};

/* The primary key is (node_id, instance_id). */
inline const ExtensionTableShape kNodesShape = {"snowflake_nodes", kNodeColumns,
												kNodeColumnCount, 2};
inline const ExtensionTableShape kNodesShapeBefore16 = {"snowflake_nodes", kNodeColumns,
														kNodeColumnsBefore16, 2};

/*
 * An instance counts as running while its heartbeat changed within this
 * many of our intervals: heartbeats arrive through replication, in bursts.
 */
constexpr int kRunningWindowIntervals = 3;

/* That window, in microseconds, at the current snowflake.registry_interval. */
inline int64
RunningWindowUs(void)
{
	return int64{kRunningWindowIntervals} * g_settings.registry_interval_ms * 1000;
}

/* Whether an open snowflake_nodes has the columns of 1.6: the clock. */
inline bool
NodesCarryClock(const ExtensionTable *nodes)
{
	return nodes->shape->column_count == kNodeColumnCount;
}

#endif /* SNOWFLAKE_PG_REGISTRY_NODES_TABLE_HPP */
