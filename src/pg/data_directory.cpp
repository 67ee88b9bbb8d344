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
 * A fresh data directory and an upgraded one look alike, except in what
 * pg_upgrade does to the new one.  Its first binary-upgrade start finds no
 * state file if the directory never started normally, and marks it.  One
 * started before (to check its configuration) has files of its own: the
 * restore, creating the extension in binary-upgrade mode, marks it then,
 * recording what it holds.  The old cluster, also started in binary-upgrade
 * mode but only read, has its files and is not marked.  A normal start with
 * the marker needs the old directory's files: a reservation, and lease
 * files, that are not the ones recorded (the lease part stays until they
 * come, even while snowflake.lease_workers = 0).
 */
extern "C"
{
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/pg_extension.h"
#include "miscadmin.h"  /* IsBinaryUpgrade, DataDir */
#include "storage/fd.h" /* durable_unlink */
#include "utils/fmgroids.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
}

#include <sys/stat.h>

#include "pg/clock.hpp"
#include "pg/data_directory.hpp"
#include "pg/durable_file.hpp"
#include "pg/settings.hpp"

/* No layout file at this start (set in the postmaster). */
static bool new_data_directory = false;

static FirstIdRecords first_id_records = nullptr;

/* stat() into "st"; false if there is no such file, FATAL on another failure. */
static bool
StatIfExists(const char *path, struct stat *st)
{
	if (stat(path, st) == 0)
		return true;
	if (errno != ENOENT)
		ereport(FATAL,
				(errcode_for_file_access(),
				 errmsg("could not stat file \"%s\": %m", path)));
	return false;
}

/* Whether $PGDATA/<name> exists. */
static bool
FileExists(const char *name)
{
	char path[MAXPGPATH];
	struct stat st;

	DataDirectoryFile(name, path);
	return StatIfExists(path, &st);
}

/*
 * The marker: the time it was made, then what this data directory held at
 * pg_upgrade's restore, so that a normal start can tell the files carried
 * from the old data directory from those of a start before the upgrade.
 * -1 for a file that was not there.
 */
enum MarkerField
{
	kMarkedAtMs,
	kMarkedReservation,       /* the reservation's number */
	kMarkedLeaseStateSize,    /* snowflake.lease_state: its size */
	kMarkedLeaseStateMtimeNs, /* and its modification time */
	kMarkerFields
};

static constexpr const char *kMarkerHint =
	"Copy the state files from the old data directory as \"Upgrading PostgreSQL\" in the "
	"snowflake documentation says, then remove snowflake.upgraded.";

/* The reservation's number, or -1 without the file. */
static int64
ReservationNumber(const char *path)
{
	int64 value;

	if (!ReadStateFile(path, "reservation", &value, 1,
					   "Copy snowflake.reservation from the old data directory."))
		return -1;
	return value;
}

/* A lease state's size and modification time (ns), or -1 and -1. */
static void
LeaseStateStamp(const char *path, int64 *size, int64 *mtime_ns)
{
	struct stat st;

	*size = -1;
	*mtime_ns = -1;
	if (!StatIfExists(path, &st))
		return;
	*size = st.st_size;
	*mtime_ns = static_cast<int64>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

/* Writes the marker with what the data directory holds now. */
static void
WriteMarker(const char *marker, int elevel)
{
	char reservation[MAXPGPATH];
	char lease_state[MAXPGPATH];
	int64 fields[kMarkerFields];

	DataDirectoryFile(kReservationFileName, reservation);
	DataDirectoryFile(kLeaseStateFileName, lease_state);
	fields[kMarkedAtMs] = NowUnixMs();
	fields[kMarkedReservation] = ReservationNumber(reservation);
	LeaseStateStamp(lease_state, &fields[kMarkedLeaseStateSize],
					&fields[kMarkedLeaseStateMtimeNs]);
	WriteStateFile(marker, fields, kMarkerFields, elevel);
	ereport(LOG,
			(errmsg("snowflake marked this data directory as built by pg_upgrade"),
			 errdetail(
				 "It must receive snowflake.layout, snowflake.reservation and the lease "
				 "files from the old data directory before it starts normally.")));
}

/* Whether an extension named snowflake has the OID (seeing this command's insert). */
static bool
IsSnowflakeExtension(Oid extension_oid)
{
	ScanKeyData key;
	bool found = false;

	ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(extension_oid));
	Relation rel = table_open(ExtensionRelationId, AccessShareLock);
	SysScanDesc scan = systable_beginscan(rel, ExtensionOidIndexId, true, SnapshotSelf, 1,
										  &key);
	HeapTuple tuple = systable_getnext(scan);

	if (HeapTupleIsValid(tuple))
		found = strcmp(NameStr(((Form_pg_extension) GETSTRUCT(tuple))->extname),
					   "snowflake") == 0;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return found;
}

void
MarkUpgradeTargetOnAccess(ObjectAccessType access, Oid class_id, Oid object_id)
{
	char marker[MAXPGPATH];

	/*
	 * Only pg_upgrade's restore creates the extension in binary-upgrade
	 * mode, and only in the new cluster: the old one is only read.
	 */
	if (!IsBinaryUpgrade || access != OAT_POST_CREATE || class_id != ExtensionRelationId ||
		!IsSnowflakeExtension(object_id))
		return;
	if (FileExists(kUpgradeMarkerFileName))
		return;
	/*
	 * The files were copied in before pg_upgrade (the Debian hook).  The
	 * restore creates the extension once per database, so the note stays
	 * until the first normal start (GuardStateAcrossUpgrade).
	 */
	if (FileExists(kCarriedFileName))
		return;
	DataDirectoryFile(kUpgradeMarkerFileName, marker);
	WriteMarker(marker, ERROR);
}

/* The fix of a refused start after pg_upgrade, with DataDir. */
static constexpr const char *kCopyStateFilesHint =
	"Copy snowflake.layout, snowflake.reservation and, each if it exists, snowflake.leases "
	"and snowflake.lease_state from the old data directory into \"%s\", or see \"Upgrading "
	"PostgreSQL\" in the snowflake documentation.";

static void
GuardStateAcrossUpgrade(void)
{
	char marker[MAXPGPATH];
	char reservation[MAXPGPATH];

	DataDirectoryFile(kUpgradeMarkerFileName, marker);
	DataDirectoryFile(kReservationFileName, reservation);

	bool marked = FileExists(kUpgradeMarkerFileName);
	bool has_reservation = FileExists(kReservationFileName);

	if (IsBinaryUpgrade)
	{
		/*
		 * A directory without state files is pg_upgrade's new cluster;
		 * one started before is marked when the restore creates the
		 * extension (MarkUpgradeTargetOnAccess): the old cluster has files
		 * too, and must stay unmarked.
		 */
		if (!marked && !has_reservation && !FileExists(kLayoutFileName))
			WriteMarker(marker, FATAL);
		return;
	}

	char carried[MAXPGPATH];

	DataDirectoryFile(kCarriedFileName, carried);
	if (FileExists(kCarriedFileName))
	{
		(void) durable_unlink(carried, FATAL);
		ereport(LOG, (errmsg("snowflake found the state files carried before pg_upgrade")));
	}
	if (!marked)
		return;

	int64 marked_fields[kMarkerFields];

	(void) ReadStateFile(marker, "pg_upgrade marker", marked_fields, kMarkerFields,
						 kMarkerHint);
	if (!has_reservation)
		ereport(FATAL,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("this data directory was built by pg_upgrade, and snowflake's "
					"state files were not carried into it"),
			 errdetail("Without the old data directory's snowflake.reservation, IDs "
					   "could start below IDs that the old cluster issued."),
			 errhint(kCopyStateFilesHint, DataDir)));
	if (marked_fields[kMarkedReservation] >= 0 &&
		ReservationNumber(reservation) == marked_fields[kMarkedReservation])
		ereport(FATAL,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("this data directory was built by pg_upgrade, and its snowflake "
					"state files are its own, not the old data directory's"),
			 errdetail("snowflake.reservation is the one this data directory held when "
					   "pg_upgrade ran, made by a start before the upgrade; IDs could "
					   "start below IDs that the old cluster issued."),
			 errhint(kCopyStateFilesHint, DataDir)));

	/*
	 * The lease files, whatever the lease space now: without them the
	 * worker ids applications still hold would be leased again, now or
	 * once snowflake.lease_workers is raised.  The binary-upgrade start
	 * leaves the lease state as it found it, so one unchanged since then is
	 * this directory's own.
	 */
	char lease_state[MAXPGPATH];
	int64 size;
	int64 mtime_ns;

	DataDirectoryFile(kLeaseStateFileName, lease_state);
	LeaseStateStamp(lease_state, &size, &mtime_ns);

	bool own_lease_state = size >= 0 && size == marked_fields[kMarkedLeaseStateSize] &&
		mtime_ns == marked_fields[kMarkedLeaseStateMtimeNs];

	if (size < 0 || own_lease_state || !FileExists(kLeaseSpaceFileName))
	{
		if (g_settings.lease_workers == 0)
		{
			ereport(
				LOG,
				(errmsg("snowflake keeps the pg_upgrade marker: the lease files of the old "
						"data directory were not carried"),
				 errdetail("No worker id is leased while snowflake.lease_workers = 0; a "
						   "start with a lease space is refused until they are.")));
			return;
		}
		ereport(
			FATAL,
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
	}
	/* Carried: the reservation bounds the old IDs from now on. */
	(void) durable_unlink(marker, LOG);
	ereport(LOG, (errmsg("snowflake found the state carried from the old data directory")));
}

void
CheckDataDirectoryAtStart(void)
{
	new_data_directory = !FileExists(kLayoutFileName);
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
