/*
 * lease_space.cpp
 *	  Checking and recording $PGDATA/snowflake.leases (see lease_space.hpp).
 */
extern "C"
{
#include "postgres.h"
}

#include <cstdio>

#include "pg/durable_file.hpp"
#include "pg/leases/lease_file.hpp"
#include "pg/leases/lease_space.hpp"
#include "pg/settings.hpp"

static constexpr const char *kLeaseSpaceHint =
	"Restore the file from a backup of the data directory, or write in it, on one "
	"line, the snowflake.worker_bits and snowflake.lease_workers this data "
	"directory last ran with, separated by a space.";

/* The file does not hold the running lease space yet (set in the postmaster). */
static bool lease_space_to_record = false;

void
CheckLeaseSpaceOfDataDirectory(void)
{
	const int worker_bits = g_settings.layout.worker_bits;
	const int lease_workers = g_settings.lease_workers;
	char path[MAXPGPATH];
	char detail[kStateProblemSize];
	int64 fields[2];

	NoteLeaseFileStart();
	DataDirectoryFile(kLeaseSpaceFileName, path);
	if (!ReadStateFile(path, "lease space", fields, 2, kLeaseSpaceHint))
	{
		lease_space_to_record = true;
		return;
	}
	if (fields[0] < 0 || fields[0] > 16 || fields[1] < 0 ||
		fields[1] >= (INT64CONST(1) << fields[0]))
	{
		snprintf(detail, sizeof(detail), "%lld lease workers do not fit %lld worker bits.",
				 static_cast<long long>(fields[1]), static_cast<long long>(fields[0]));
		ReportCorruptStateFile(path, "lease space", detail, kLeaseSpaceHint);
	}
	lease_space_to_record = fields[0] != worker_bits || fields[1] != lease_workers;

	/* Another worker-id space altogether: the layout file's check decides. */
	if (fields[0] != worker_bits || fields[1] <= lease_workers)
		return;

	uint32 all = g_settings.layout.MaxWorkerId() + 1;

	ereport(FATAL,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("snowflake.lease_workers cannot shrink from %lld to %d",
					static_cast<long long>(fields[1]), lease_workers),
			 errdetail("Worker ids %u to %u may have been leased to applications, which "
					   "may still issue IDs with them; sessions would issue the same IDs.",
					   all - static_cast<uint32>(fields[1]),
					   all - static_cast<uint32>(lease_workers) - 1),
			 errhint("Restore snowflake.lease_workers = %lld, or see \"Changing the "
					 "lease space\" in the snowflake documentation.",
					 static_cast<long long>(fields[1]))));
}

void
RecordLeaseSpaceOfDataDirectory(void)
{
	char path[MAXPGPATH];
	int64 fields[2] = {g_settings.layout.worker_bits, g_settings.lease_workers};

	if (!lease_space_to_record)
		return;
	DataDirectoryFile(kLeaseSpaceFileName, path);
	WriteStateFile(path, fields, 2, ERROR);
	lease_space_to_record = false;
}
