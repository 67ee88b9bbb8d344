/*
 * layout_file.cpp
 *	  Reading and durably replacing $PGDATA/snowflake.layout.
 *
 * The file is one line of text, "epoch_ms node_bits worker_bits
 * sequence_bits", so an operator can read it.
 */
#include "postgres_headers.hpp"

#include <cstdio>

#include "clock.hpp"
#include "durable_file.hpp"
#include "layout_file.hpp"
#include "layout_registry.hpp"
#include "settings.hpp"

/* False if there is no file yet; FATAL if it cannot be read. */
static bool
ReadLayoutFile(snowflake::Layout *layout)
{
	char	   *path = DataDirectoryFile(kLayoutFileName);
	char		line[128];
	long long	epoch_ms;

	if (!ReadSmallFile(path, line, sizeof(line), FATAL))
		return false;
	if (sscanf(line, "%lld %d %d %d", &epoch_ms, &layout->node_bits,
			   &layout->worker_bits, &layout->sequence_bits) != 4 ||
		snowflake::CheckWidths(*layout) != snowflake::WidthProblem::kOk)
		ereport(FATAL,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("file \"%s\" does not hold a snowflake layout", path)));
	layout->epoch_ms = epoch_ms;
	return true;
}

static void
WriteLayoutFile(const snowflake::Layout &layout)
{
	WriteFileDurably(DataDirectoryFile(kLayoutFileName),
					 psprintf("%lld %d %d %d\n", static_cast<long long>(layout.epoch_ms),
							  layout.node_bits, layout.worker_bits, layout.sequence_bits),
					 FATAL);
}

bool		g_new_data_directory = false;

void
CheckLayoutOfDataDirectory(void)
{
	const snowflake::Layout &running = g_settings.layout;
	snowflake::Layout last;
	int64		now_ms = NowUnixMs();

	g_new_data_directory = !ReadLayoutFile(&last);
	if (!g_new_data_directory)
	{
		if (last == running)
			return;

		/*
		 * New IDs are not older than this start; old ones reach at most
		 * kMaxReachAheadMs past it.
		 */
		if (!snowflake::IsProvableSuccessor(last, now_ms + kMaxReachAheadMs, running, now_ms))
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
	WriteLayoutFile(running);
}
