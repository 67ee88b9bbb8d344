/*
 * data_directory.hpp
 *	  What snowflake keeps in $PGDATA (src/pg/README.md): its files' names,
 *	  whether the data directory is new, the first-ID records and the
 *	  pg_upgrade guard.  Each subsystem reads and writes its own file.
 */
#ifndef SNOWFLAKE_PG_DATA_DIRECTORY_HPP
#define SNOWFLAKE_PG_DATA_DIRECTORY_HPP

extern "C"
{
#include "postgres.h"

#include "catalog/objectaccess.h"
}

/* The files, relative to the data directory; each owner's header describes its own. */
constexpr const char *kLayoutFileName = "snowflake.layout";
constexpr const char *kReservationFileName = "snowflake.reservation";
constexpr const char *kLeaseSpaceFileName = "snowflake.leases";
constexpr const char *kLeaseStateFileName = "snowflake.lease_state";
/* Not needed for uniqueness; a copy to another machine is ignored. */
constexpr const char *kClockFileName = "snowflake.clock";

/*
 * The pg_upgrade guard's marker: made by pg_upgrade in the new data
 * directory (a binary-upgrade start without state files, or the restore
 * creating the extension), removed once the old directory's files came.
 */
constexpr const char *kUpgradeMarkerFileName = "snowflake.upgraded";

/*
 * Left by whoever copied the old directory's state files in before
 * pg_upgrade ran (debian/pg_upgradecluster-hook): the restore then makes no
 * marker, and removes this file.
 */
constexpr const char *kCarriedFileName = "snowflake.carried";

/*
 * In the postmaster, at start, after the subsystems checked their files
 * (so a file that cannot be read was reported by its own check): notes
 * whether the data directory is new (no layout file: no ID was ever issued
 * from it), and runs the pg_upgrade guard (data_directory.cpp).
 */
void		CheckDataDirectoryAtStart(void);

/*
 * The object access hook's part (binary-upgrade mode only): pg_upgrade's
 * restore creating the extension marks the data directory, recording the
 * state files it holds (a start before the upgrade made them), unless
 * snowflake.carried says they were copied from the old one.
 */
void		MarkUpgradeTargetOnAccess(ObjectAccessType access, Oid class_id, Oid object_id);

/* Whether the data directory had no layout file at this server's start. */
bool		DataDirectoryIsNew(void);

/*
 * Writes, durably, what each subsystem records before the first ID; ERROR
 * if a file cannot be written.  module.cpp installs it from _PG_init.
 */
typedef void (*FirstIdRecords)(void);
void		InstallFirstIdRecords(FirstIdRecords records);

/*
 * Called by the reservation under its lock before it publishes the floor
 * (reservation.cpp, FixFloorLocked, says why).  ERROR if none are installed
 * or a file cannot be written.
 */
void		RecordDataDirectoryBeforeFirstId(void);

#endif							/* SNOWFLAKE_PG_DATA_DIRECTORY_HPP */
