/*
 * clock_skew.hpp
 *	  Clocks compared across nodes through their registry heartbeats.
 *
 * Each heartbeat carries its writer's trusted clock (pg/clock_watch.hpp)
 * and the running instances whose heartbeats proved their clock ahead of
 * the writer's beyond snowflake.clock_skew_threshold, with how much at
 * least: the node behind proves a skew from the row (a replication delay
 * can hide one, never make one up: core/clock_skew.hpp), the node ahead
 * reads it in the row of the node behind.
 */
#ifndef SNOWFLAKE_PG_REGISTRY_CLOCK_SKEW_HPP
#define SNOWFLAKE_PG_REGISTRY_CLOCK_SKEW_HPP

#include "pg/extension_table.hpp"
#include "pg/shared_state.hpp"

/* Fills the heartbeat's clock columns: the trusted clock now, and the findings. */
void FillHeartbeatClock(Datum *row);

/*
 * Reads the other running instances' clocks in "nodes" (after this
 * round's heartbeat), records the summary in registry slot "slot" and
 * logs the changes.  A table of 1.3 or older carries no clock: the slot
 * then compares none.
 */
void CompareClocks(SharedState *state, const ExtensionTable *nodes, int slot,
				   const char *database);

/* ERROR: this node's clock disagrees with its peers' and on_clock_skew is refuse. */
[[noreturn]] void ReportClockSkewRefusal(SharedState *state);

/*
 * What snowflake_status() shows: of the running registry whose proven
 * disagreement is largest, the peers compared, how many disagree, and the
 * disagreement (signed, ms; *compared false: no peer compared).
 */
void ClockSkewStatus(SharedState *state, int32 *peers, int32 *skewed_peers,
					 int64 *largest_ms, bool *compared);

#endif /* SNOWFLAKE_PG_REGISTRY_CLOCK_SKEW_HPP */
