/*
 * data_directory.hpp
 *	  What snowflake keeps in $PGDATA, beside PostgreSQL's own files: the
 *	  list of its files, whether the data directory is new to snowflake,
 *	  the records each subsystem makes there before the first ID, and the
 *	  guard that refuses a data directory pg_upgrade built without them.
 *
 * Each subsystem reads and writes its own file; this module says which
 * files there are and when the first-ID records are made.  It includes no
 * subsystem's header: module.cpp installs the function that calls each
 * subsystem's Record… function (InstallFirstIdRecords), as it installs
 * the initializer of the shared state.
 */
#ifndef SNOWFLAKE_PG_DATA_DIRECTORY_HPP
#define SNOWFLAKE_PG_DATA_DIRECTORY_HPP

extern "C"
{
#include "postgres.h"

#include "catalog/objectaccess.h"
}

/* The files, relative to the data directory. */

/* The layout the data directory last ran with (layout/layout_file.hpp). */
constexpr const char *kLayoutFileName = "snowflake.layout";

/* The durable reservation (reservation/reservation.hpp). */
constexpr const char *kReservationFileName = "snowflake.reservation";

/* The lease space the data directory last ran with (leases/lease_space.hpp). */
constexpr const char *kLeaseSpaceFileName = "snowflake.leases";

/* The leases, a block per worker id (leases/lease_file.hpp). */
constexpr const char *kLeaseStateFileName = "snowflake.lease_state";

/*
 * The trusted clock at the last clean shutdown or clock step
 * (clock_watch.hpp): a restart on the same boot keeps a pending step
 * pending.  Not needed for uniqueness; a copy to another machine is ignored.
 */
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
 * against the settings (so a file that cannot be read was reported by its
 * own check):
 *	- notes whether the data directory is new to snowflake (it has no layout
 *	  file: snowflake never ran here, so no ID was ever issued from it);
 *	- guards against pg_upgrade.  In binary-upgrade mode, marks a data
 *	  directory that holds neither state file (pg_upgrade's new cluster).
 *	  In normal mode, with the marker, FATAL (SQLSTATE 55000) while the
 *	  reservation is missing or is the one the marker recorded, or, with a
 *	  lease space, while a lease file is missing or the lease state is the
 *	  recorded one; with lease_workers = 0 the marker then stays.  Once all
 *	  came, removes the marker.
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
 * if a file cannot be written.  Installed by module.cpp.
 */
typedef void (*FirstIdRecords)(void);

/* _PG_init: installs the records; each process inherits or reinstalls them. */
void		InstallFirstIdRecords(FirstIdRecords records);

/*
 * Makes the first-ID records: called by the reservation once recovery has
 * ended, under its lock, before it publishes the generation floor, and so
 * before any ID or lease (reservation.cpp, FixFloorLocked, says why the
 * order matters).  ERROR if none are installed or a file cannot be written.
 */
void		RecordDataDirectoryBeforeFirstId(void);

#endif							/* SNOWFLAKE_PG_DATA_DIRECTORY_HPP */
