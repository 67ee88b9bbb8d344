/*
 * layout_file.cpp
 *	  Reading and durably replacing $PGDATA/snowflake.layout.
 *
 * The file is one line of text, "epoch_ms node_bits worker_bits
 * sequence_bits", so an operator can read it.  It is checked in the
 * postmaster at start, but written only once the server has started and
 * before its first ID (RecordDataDirectoryBeforeFirstId).
 */
extern "C"
{
#include "postgres.h"
}

#include <cstdio>

#include "core/reach_ahead.hpp"
#include "pg/clock.hpp"
#include "pg/durable_file.hpp"
#include "pg/layout/layout_file.hpp"
#include "pg/layout/layout_registry.hpp"
#include "pg/reservation/reservation.hpp"
#include "pg/settings.hpp"

/* The epochs snowflake.epoch can express: years 0000 to 9999. */
static constexpr int64 kFirstEpochMs = INT64CONST(-62167219200000);
static constexpr int64 kLastEpochMs = INT64CONST(253402300799999);

static constexpr const char *kLayoutHint =
	"Restore the file from a backup of the data directory, or write in it, on one "
	"line, the layout this data directory last ran with: its epoch in Unix "
	"milliseconds and its node, worker and sequence bits, separated by spaces.";

/* False if there is no file yet; FATAL if it cannot be read or is corrupt. */
static bool
ReadLayoutFile(snowflake::Layout *layout)
{
	char		path[MAXPGPATH];
	char		detail[kStateProblemSize];
	int64		fields[4];

	DataDirectoryFile(kLayoutFileName, path);
	if (!ReadStateFile(path, "layout", fields, 4, kLayoutHint))
		return false;
	if (fields[0] < kFirstEpochMs || fields[0] > kLastEpochMs)
	{
		snprintf(detail, sizeof(detail),
				 "The epoch, " INT64_FORMAT " (Unix ms), is out of range.", fields[0]);
		ReportCorruptStateFile(path, "layout", detail, kLayoutHint);
	}
	for (int i = 1; i < 4; i++)
		if (fields[i] < 0 || fields[i] > snowflake::kUsableBits)
		{
			snprintf(detail, sizeof(detail), "The width " INT64_FORMAT " is out of range.",
					 fields[i]);
			ReportCorruptStateFile(path, "layout", detail, kLayoutHint);
		}
	layout->epoch_ms = fields[0];
	layout->node_bits = static_cast<int>(fields[1]);
	layout->worker_bits = static_cast<int>(fields[2]);
	layout->sequence_bits = static_cast<int>(fields[3]);
	if (snowflake::CheckWidths(*layout) != snowflake::WidthProblem::kOk)
	{
		snprintf(detail, sizeof(detail),
				 "The widths %d, %d and %d do not form a valid layout.",
				 layout->node_bits, layout->worker_bits, layout->sequence_bits);
		ReportCorruptStateFile(path, "layout", detail, kLayoutHint);
	}
	return true;
}

/* The file does not hold the running layout yet (set in the postmaster). */
static bool layout_to_record = false;

void
CheckLayoutOfDataDirectory(void)
{
	const snowflake::Layout &running = g_settings.layout;
	snowflake::Layout last;
	int64		now_ms = NowUnixMs();
	bool		recorded = ReadLayoutFile(&last);

	layout_to_record = !recorded || last != running;
	if (!recorded || last == running)
		return;

	/*
	 * New IDs are not older than this start; old ones reach at most
	 * kMaxReachAheadMs past it, or the recorded reservation.
	 */
	int64		reservation_unix_ms = -1;

	if (!ReadReservationFile(&reservation_unix_ms))
		reservation_unix_ms = -1;

	int64		old_reach_ms = snowflake::EarlierIdsReachUnixMs(now_ms, reservation_unix_ms);

	if (!snowflake::IsProvableSuccessor(last, old_reach_ms, running, now_ms))
		ereport(FATAL,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the snowflake layout differs from the layout this data "
						"directory last ran with"),
				 errdetail("Last: %s. Now: %s. Not every new ID would be larger "
						   "than every ID already issued.",
						   DescribeLayout(last), DescribeLayout(running)),
				 errhint("Restore the previous snowflake.* settings, or see "
						 "\"Changing the layout\" in the snowflake documentation.")));
	ereport(LOG,
			(errmsg("snowflake layout changed from %s to %s",
					DescribeLayout(last), DescribeLayout(running))));
}

void
RecordLayoutOfDataDirectory(void)
{
	const snowflake::Layout &running = g_settings.layout;
	char		path[MAXPGPATH];
	int64		fields[4] = {
		running.epoch_ms, running.node_bits, running.worker_bits, running.sequence_bits
	};

	if (!layout_to_record)
		return;
	DataDirectoryFile(kLayoutFileName, path);
	WriteStateFile(path, fields, 4, ERROR);
	layout_to_record = false;
}
