/*
 * upgrade_guard.hpp
 *	  Refusing to start a data directory that pg_upgrade built, until the
 *	  old cluster's snowflake state files were carried into it.
 */
#ifndef SNOWFLAKE_PG_RESERVATION_UPGRADE_GUARD_HPP
#define SNOWFLAKE_PG_RESERVATION_UPGRADE_GUARD_HPP

/* The marker a binary-upgrade start leaves in a data directory without state. */
constexpr const char *kUpgradeMarkerFileName = "snowflake.upgraded";

/*
 * In the postmaster, at start.  In binary-upgrade mode, marks a data
 * directory that holds neither state file (pg_upgrade's new cluster).  In
 * normal mode, FATAL (SQLSTATE 55000) if the marker is there and the
 * reservation file is not; once it is, removes the marker.
 */
void		GuardStateAcrossUpgrade(void);

#endif							/* SNOWFLAKE_PG_RESERVATION_UPGRADE_GUARD_HPP */
