/*
 * node_registry.hpp
 *	  Detecting two running primaries with the same node_id.
 *
 * Instance: one run of a server, from a start (or crash restart) to its
 * stop, named by a random UUID.  A restarted server, a clone and a promoted
 * standby are each a new instance.
 *
 * Registry: the table snowflake_nodes of a database with the extension
 * (every such database when snowflake.database is '', else the one it
 * names), which the multi-primary replication must carry.  The database's
 * "snowflake registry" background worker rewrites this instance's row every
 * snowflake.registry_interval, adding one to its heartbeat count, and reads
 * the rows of other instances with the same node_id.  An instance whose
 * count grew within the last three intervals is running: a collision (so
 * every node should use the same interval).  Counting
 * beats rather than comparing timestamps needs no agreement between the
 * nodes' clocks, and rows left by this server's own earlier runs never
 * advance, so a restart is not mistaken for a collision.
 */
#ifndef SNOWFLAKE_PG_NODE_REGISTRY_HPP
#define SNOWFLAKE_PG_NODE_REGISTRY_HPP

#include "pg/shared_state.hpp"

/*
 * Sets up the registry's fields of freshly created shared memory (at start
 * and after a crash restart): a fresh random instance id, no collision,
 * no round yet.
 */
void		InitRegistryState(SharedState *state);

/*
 * The registry worker's entry point: started by the launcher with the
 * database's OID as its argument, or registered by _PG_init (argument 0)
 * when snowflake.database names a database.
 */
extern "C" PGDLLEXPORT void snowflake_registry_main(Datum arg);

/* ERROR explaining that a node-id collision stopped generation. */
[[noreturn]] void ReportGenerationBlocked(SharedState *state);

#endif							/* SNOWFLAKE_PG_NODE_REGISTRY_HPP */
