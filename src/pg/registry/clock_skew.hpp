/*
 * clock_skew.hpp
 *	  Clocks compared across nodes through their registry heartbeats.
 *
 * Each heartbeat carries its writer's trusted clock (pg/clock_watch.hpp)
 * at the time of writing, and the running instances whose heartbeats
 * proved their clock ahead of the writer's by more than
 * snowflake.clock_skew_threshold, with how much at least.  Each registry
 * compares the running instances' rows with its own clock
 * (core/clock_skew.hpp: a replication delay can hide a skew, never make
 * one up), keeps the summary in its slot, and logs each peer that starts
 * or stops disagreeing, on both sides: the node behind proves it from the
 * row, the node ahead reads it in the row of the node behind.  While this
 * node disagrees with more than half of its peers, snowflake_nextval()
 * takes its slow path, which refuses IDs under
 * snowflake.on_clock_skew = refuse.
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
