/*
 * data_directory.cpp
 *	  Whether the data directory is new, the first-ID records, and the
 *	  pg_upgrade guard.
 *
 * The pg_upgrade guard: pg_upgrade builds a new data directory and copies
 * the catalog and the tables into it, but not the files snowflake keeps
 * beside them.  Started without snowflake.reservation, the new server would
 * take its clock as the only bound (a new data directory), and with that
 * clock behind the old one's, issue IDs below, or equal to, IDs already in
 * the tables.
 *
 * A fresh data directory and an upgraded one look alike, except that
 * pg_upgrade starts the new one in binary-upgrade mode first, before it
 * was ever started normally, so before it has any state file.  That start
 * leaves a marker; a normal start with the marker needs the reservation.
 * The old cluster, also started in binary-upgrade mode by pg_upgrade, has
 * its state files (a server writes both as it starts), so it is not marked.
 */
extern "C"
{
#include "postgres.h"

#include "miscadmin.h"			/* IsBinaryUpgrade, DataDir */
#include "storage/fd.h"			/* durable_unlink */
}

#include <sys/stat.h>

#include "pg/clock.hpp"
#include "pg/data_directory.hpp"
#include "pg/durable_file.hpp"
#include "pg/settings.hpp"

/* No layout file at this start (set in the postmaster). */
static bool new_data_directory = false;

static FirstIdRecords first_id_records = nullptr;

static bool
FileExists(const char *path)
{
	struct stat st;

	if (stat(path, &st) == 0)
		return true;
	if (errno != ENOENT)
		ereport(FATAL,
				(errcode_for_file_access(),
				 errmsg("could not stat file \"%s\": %m", path)));
	return false;
}

static void
GuardStateAcrossUpgrade(void)
{
	char		marker[MAXPGPATH];
	char		reservation[MAXPGPATH];
	char		layout[MAXPGPATH];

	DataDirectoryFile(kUpgradeMarkerFileName, marker);
	DataDirectoryFile(kReservationFileName, reservation);
	DataDirectoryFile(kLayoutFileName, layout);

	bool		marked = FileExists(marker);
	bool		has_reservation = FileExists(reservation);

	if (IsBinaryUpgrade)
	{
		if (marked || has_reservation || FileExists(layout))
			return;

		/* The time of this start, for the operator who finds the file. */
		int64		now_ms = NowUnixMs();

		WriteStateFile(marker, &now_ms, 1, FATAL);
		ereport(LOG,
				(errmsg("snowflake marked this data directory as built by pg_upgrade"),
				 errdetail("It must receive snowflake.layout and snowflake.reservation "
						   "from the old data directory before it starts normally.")));
		return;
	}

	if (!marked)
		return;
	if (!has_reservation)
		ereport(
			FATAL,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("this data directory was built by pg_upgrade, and snowflake's "
					"state files were not carried into it"),
			 errdetail("Without the old data directory's snowflake.reservation, IDs "
					   "could start below IDs that the old cluster issued."),
			 errhint("Copy snowflake.layout, snowflake.reservation and, each if it exists, "
					 "snowflake.leases and snowflake.lease_state from the old data "
					 "directory into \"%s\", or see \"Upgrading PostgreSQL\" in the "
					 "snowflake documentation.",
					 DataDir)));

	/*
	 * With a lease space, the lease files too: without them the worker ids
	 * applications still hold would be leased again from the floor, and a
	 * smaller lease space would go unnoticed.  (The binary-upgrade start
	 * creates no lease state.)
	 */
	char		leases[MAXPGPATH];
	char		lease_state[MAXPGPATH];

	DataDirectoryFile(kLeaseSpaceFileName, leases);
	DataDirectoryFile(kLeaseStateFileName, lease_state);
	if (g_settings.lease_workers > 0 && (!FileExists(leases) || !FileExists(lease_state)))
		ereport(FATAL,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("this data directory was built by pg_upgrade, and snowflake's lease "
						"files were not carried into it"),
				 errdetail("Without the old data directory's snowflake.leases and "
						   "snowflake.lease_state, worker ids that applications still hold "
						   "could be leased again."),
				 errhint("Copy snowflake.leases and snowflake.lease_state from the old data "
						 "directory into \"%s\".  An old cluster without them held no lease: "
						 "then create an empty snowflake.lease_state, and write its "
						 "snowflake.worker_bits and 0 into snowflake.leases.",
						 DataDir)));
	/* Carried: the reservation bounds the old IDs from now on. */
	(void) durable_unlink(marker, LOG);
	ereport(LOG, (errmsg("snowflake found the state carried from the old data directory")));
}

void
CheckDataDirectoryAtStart(void)
{
	char		layout[MAXPGPATH];

	DataDirectoryFile(kLayoutFileName, layout);
	new_data_directory = !FileExists(layout);
	GuardStateAcrossUpgrade();
}

bool
DataDirectoryIsNew(void)
{
	return new_data_directory;
}

void
InstallFirstIdRecords(FirstIdRecords records)
{
	first_id_records = records;
}

void
RecordDataDirectoryBeforeFirstId(void)
{
	/* Without them, IDs could outlive a record that must precede them. */
	if (first_id_records == nullptr)
		elog(ERROR, "snowflake: no first-ID records are installed");
	first_id_records();
}
