/*
 * settings.hpp
 *	  The snowflake.* configuration settings and the layout they describe.
 *
 * Every setting that shapes IDs is PGC_POSTMASTER: it is read once at server
 * start, validated as a whole, and turned into the Layout all backends use.
 */
#ifndef SNOWFLAKE_PG_SETTINGS_HPP
#define SNOWFLAKE_PG_SETTINGS_HPP

#include "core/layout.hpp"
#include "core/reach_ahead.hpp"
#include "pg/clock.hpp"

/* The bounds of max_drift and reserve_ahead, and so of earlier runs' reach. */
using snowflake::kMaxDriftLimitMs;
using snowflake::kMaxReachAheadMs;
using snowflake::kMaxReserveAheadMs;

/* What a node does when another running instance uses its node_id. */
enum NodeCollisionPolicy
{
	kCollisionWarn,
	kCollisionError,
};

/* What a session does when the next ID lies beyond max_drift of the clock. */
enum ClockBehindPolicy
{
	kClockBehindWait,			/* wait up to clock_wait_timeout, then fail */
	kClockBehindRide,			/* issue anyway, timestamps advancing with the IDs */
};

/* What a node does when its clock disagrees with its peers' (registry/clock_skew.hpp). */
enum ClockSkewPolicy
{
	kClockSkewWarn,
	kClockSkewRefuse,
};

struct Settings
{
	snowflake::Layout layout;	/* valid once DefineSettings() returned */
	int			node_id;
	int			max_drift_ms;
	int			reserve_ahead_ms;	/* changeable on reload */
	char *registry_database;        /* where snowflake_nodes is kept; "": everywhere */
	int			registry_interval_ms;	/* changeable on reload */
	int			on_node_collision;	/* a NodeCollisionPolicy; on reload */
	int			clock_wait_timeout_ms;	/* changeable per session */

	/* Forward steps of the wall clock (pg/clock_watch.hpp); on reload. */
	int			clock_step_threshold_ms;
	int			clock_step_confirmation_ms;
	int			on_clock_behind;	/* a ClockBehindPolicy; on reload */

	/* Clocks compared across nodes (registry/clock_skew.hpp); on reload. */
	int clock_skew_threshold_ms;
	int on_clock_skew; /* a ClockSkewPolicy */

	/*
	 * Worker-id leases (src/pg/leases/): the top lease_workers worker ids
	 * are leased to application-side generators, never attached to by
	 * sessions.  The other two are changeable on reload.
	 */
	int			lease_workers;
	int			lease_clock_tolerance_ms;
	int			lease_connection_window_ms;
	bool		allow_connection_leases;	/* changeable on reload */

	/*
	 * Whether the planner turns comparisons of snowflake_timestamp(id) into
	 * ranges of id (src/pg/planner/); per session.
	 */
	bool		rewrite_timestamp_comparisons;
};

/*
 * The longest a lease may run ahead of its last renewal (its ttl or window):
 * 24 h.  A layout change is accepted only if new IDs lie above
 * kMaxReachAheadMs past the start, which must so cover every lease too.
 */
constexpr int kMaxLeaseWindowMs = 86400000;
static_assert(kMaxLeaseWindowMs <= kMaxReachAheadMs,
			  "a layout change must lie beyond every lease's window");

extern Settings g_settings;

/*
 * The worker ids sessions attach to: 0 to SessionWorkerIds() - 1.  The
 * lease space follows, up to the layout's largest worker id.
 */
inline uint32
SessionWorkerIds(void)
{
	return g_settings.layout.MaxWorkerId() + 1 -
		static_cast<uint32>(g_settings.lease_workers);
}

/*
 * Defines the settings and refuses (FATAL) a combination that cannot work.
 * Call only while shared_preload_libraries is being processed.
 */
void		DefineSettings(void);

#endif							/* SNOWFLAKE_PG_SETTINGS_HPP */
