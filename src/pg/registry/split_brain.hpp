/*
 * split_brain.hpp
 *	  A standby promoted while its old primary still runs, seen from both
 *	  sides, where physical replication (not snowflake_nodes) still links
 *	  them.
 *
 * The promoted side asks, over a physical replication connection named
 * "snowflake registry node <id> instance <uuid>", IDENTIFY_SYSTEM, SHOW
 * snowflake.node_id and SHOW in_hot_standby (README.md).  The old primary
 * sees that walsender in its backend status array only if its role is a
 * superuser or has REPLICATION (an ordinary role cannot fake one and stop
 * IDs).
 */
#ifndef SNOWFLAKE_PG_REGISTRY_SPLIT_BRAIN_HPP
#define SNOWFLAKE_PG_REGISTRY_SPLIT_BRAIN_HPP

extern "C"
{
#include "postgres.h"
}

#include "pg/shared_state.hpp"

/*
 * What one side found, as a phrase for the client (no host or port) and
 * one for the server log.
 */
struct SplitBrainPeer
{
	char		client[192];
	char		log[256];
	bool		split_brain;	/* a promoted standby and its old primary */
};

/* The fix of a split brain, in the WARNING and in the error. */
extern const char *const kSplitBrainHint;

/*
 * The promoted side; outside a transaction.  Connects if not connected,
 * and asks, each within 2 s, waiting on the latch (a SIGTERM ends the
 * worker quietly), never in a blocking libpq call.  True if the server in
 * primary_conninfo is a running primary of this system with this node id.
 * A failed or timed-out connection or query is no finding; the probe
 * disconnects and tries again next round.  Only a connection that finds
 * the old primary running is kept across rounds.
 */
bool ProbeOldPrimary(SharedState *state, SplitBrainPeer *peer);

/*
 * Whether the probe's connection is one of this server's own walsenders
 * (primary_conninfo names this server itself): then it found no peer, and
 * is closed, so that the next round tries primary_conninfo's hosts again.
 * Inside a transaction.
 */
bool ProbeReachesSelf(SharedState *state);

/* The old primary's side; inside a transaction (role lookups). */
bool FindPromotedWalsender(SharedState *state, SplitBrainPeer *peer);

#endif
