/*
 * primary_settings.hpp
 *	  The SETTINGS WAL record: the settings a standby must share with its
 *	  primary to keep every lease it replays, and the checks that stop
 *	  recovery where it cannot.
 *
 * PostgreSQL's model (XLOG_PARAMETER_CHANGE, RecoveryRequiresIntParameter
 * in xlogrecovery.c): the primary logs max_connections and the like, and a
 * standby below them stops recovery naming the setting to raise.  Here the
 * primary logs its node id, lease space and layout once a run, as soon as
 * it accepts writes (after a promotion too).  A standby (StandbyMode)
 * stops recovery (FATAL), at the start of redo and on replay, when:
 *	 - the primary's lease space is not inside its own, or the primary
 *	   leases under another layout (replay skips images of another layout);
 *	 - its node id is not the primary's while the primary leases worker ids;
 *	 - a LEASE record holds a lease it cannot apply (a worker id outside its
 *	   lease space, or the primary's node id that is not its own).
 * Dropping such a record would lose a live lease at failover.  Crash
 * recovery keeps the primary's own rule: the lease file keeps what replay
 * skips, and the start checks the data directory.
 */
#ifndef SNOWFLAKE_PG_PRIMARY_SETTINGS_HPP
#define SNOWFLAKE_PG_PRIMARY_SETTINGS_HPP

#include "pg/wal.hpp"

/*
 * $PGDATA/snowflake.primary_settings: "node_id lease_workers worker_bits
 * node_bits sequence_bits epoch_ms" of the last SETTINGS record written or
 * replayed, so that a standby knows its primary's settings from the start
 * of redo, as PostgreSQL keeps the primary's in pg_control.
 */
constexpr const char *kPrimarySettingsFileName = "snowflake.primary_settings";

/*
 * Start of redo (the resource manager's rm_startup): on a standby, reads
 * the file and stops recovery if this server's settings do not cover it.
 */
void CheckPrimarySettingsAtRedoStart(void);

/* Primary: writes the SETTINGS record, once a run (later calls do nothing). */
void LogPrimarySettingsOnce(void);

/* Redo and desc of the SETTINGS record (registered in module.cpp). */
void ReplayPrimarySettingsRecord(XLogReaderState *record);
void DescribePrimarySettingsRecord(StringInfo buf, XLogReaderState *record);

/*
 * What the check of a LEASE record needs of its image (leases/ fills it
 * in, so that this ground file knows nothing of the lease table).
 */
struct LeaseRecordFacts
{
	uint32 worker_id;
	int32 node_id;
	bool live; /* not released, and not_after still ahead */
};

/*
 * Redo of LEASE, before it changes anything, for an image of a granted
 * lease under the running layout: FATAL on a standby if it holds a lease
 * this server cannot apply (see above).
 */
void CheckLeaseRecordApplies(const LeaseRecordFacts &lease);

#endif /* SNOWFLAKE_PG_PRIMARY_SETTINGS_HPP */
