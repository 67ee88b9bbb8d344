/*
 * layout_file.cpp
 *	  Reading and durably replacing $PGDATA/snowflake.layout.
 *
 * The file is one line of text, "epoch_ms node_bits worker_bits
 * sequence_bits", so an operator can read it.  It is replaced by writing a
 * temporary file, fsyncing it, renaming it over the old one and fsyncing
 * the directory, so a crash leaves either the old or the new layout.
 */
#include "postgres_headers.hpp"

#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <unistd.h>

#include "clock.hpp"
#include "layout_file.hpp"
#include "layout_registry.hpp"
#include "settings.hpp"

static char *
LayoutFilePath(const char *suffix)
{
	return psprintf("%s/%s%s", DataDir, kLayoutFileName, suffix);
}

/* False if there is no file yet; FATAL if it cannot be read. */
static bool
ReadLayoutFile(snowflake::Layout *layout)
{
	char	   *path = LayoutFilePath("");
	FILE	   *file = fopen(path, "r");
	long long	epoch_ms;

	if (file == nullptr)
	{
		if (errno == ENOENT)
			return false;
		ereport(FATAL,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", path)));
	}
	int			fields = fscanf(file, "%lld %d %d %d", &epoch_ms, &layout->node_bits,
								&layout->worker_bits, &layout->sequence_bits);

	fclose(file);
	if (fields != 4 || snowflake::CheckWidths(*layout) != snowflake::WidthProblem::kOk)
		ereport(FATAL,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("file \"%s\" does not hold a snowflake layout", path)));
	layout->epoch_ms = epoch_ms;
	return true;
}

static void
FailWrite(const char *path)
{
	ereport(FATAL,
			(errcode_for_file_access(),
			 errmsg("could not write file \"%s\": %m", path)));
}

static void
WriteLayoutFile(const snowflake::Layout &layout)
{
	char	   *path = LayoutFilePath("");
	char	   *temporary = LayoutFilePath(".tmp");
	char	   *line = psprintf("%lld %d %d %d\n", static_cast<long long>(layout.epoch_ms),
								layout.node_bits, layout.worker_bits, layout.sequence_bits);
	int			fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC, pg_file_create_mode);

	if (fd < 0)
		FailWrite(temporary);
	if (write(fd, line, strlen(line)) != static_cast<ssize_t>(strlen(line)) ||
		fsync(fd) != 0 || close(fd) != 0)
		FailWrite(temporary);
	if (rename(temporary, path) != 0)
		FailWrite(path);

	int			dir = open(DataDir, O_RDONLY);

	if (dir < 0 || fsync(dir) != 0 || close(dir) != 0)
		FailWrite(path);
}

void
CheckLayoutOfDataDirectory(void)
{
	const snowflake::Layout &running = g_settings.layout;
	snowflake::Layout last;
	int64		now_ms = NowUnixMs();

	if (ReadLayoutFile(&last))
	{
		if (last == running)
			return;
		/* As in shared memory, new IDs start at now + max_drift or later. */
		if (!snowflake::IsProvableSuccessor(last, now_ms + kMaxDriftLimitMs, running,
											now_ms + g_settings.max_drift_ms))
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
