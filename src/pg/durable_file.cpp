/*
 * durable_file.cpp
 *	  Plain POSIX I/O and strict parsing for the extension's state files.
 *	  Usable in the postmaster (before fd.c is set up, and while it exits),
 *	  the startup process and backends; no descriptor stays open across an
 *	  ereport, and nothing is allocated.
 */
extern "C"
{
#include "postgres.h"

#include "common/file_perm.h"	/* pg_file_create_mode */
#include "miscadmin.h"		/* DataDir */
}

#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <unistd.h>

#include "pg/durable_file.hpp"

/* Longer than any valid state line: 9 fields of 20 digits, a sign and a space each. */
static constexpr size_t kStateFileBufferSize = 256;

void
DataDirectoryFile(const char *name, char *path)
{
	if (snprintf(path, MAXPGPATH, "%s/%s", DataDir, name) >= MAXPGPATH)
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("data directory path is too long for file \"%s\"", name)));
}

/* Closes fd (if open) keeping errno, then reports "what" on "path"; false. */
static bool
FailOnFile(int fd, const char *what, const char *path, int elevel)
{
	int			saved_errno = errno;

	if (fd >= 0)
		close(fd);
	errno = saved_errno;
	ereport(elevel,
			(errcode_for_file_access(),
			 errmsg("could not %s file \"%s\": %m", what, path)));
	return false;
}

void
ReportCorruptStateFile(const char *path, const char *what, const char *detail,
					   const char *hint)
{
	ereport(FATAL,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("file \"%s\" does not hold a valid snowflake %s", path, what),
			 errdetail("%s", detail),
			 errhint("%s", hint)));
	pg_unreachable();
}

/*
 * Reads all of "path" into buf, up to "size" bytes.  Returns the length, or
 * -1 if the file does not exist, or "size" if it is longer than that.
 */
static ssize_t
ReadWholeFile(const char *path, char *buf, size_t size)
{
	int			fd = open(path, O_RDONLY);
	size_t		length = 0;

	if (fd < 0)
	{
		if (errno == ENOENT)
			return -1;
		FailOnFile(fd, "open", path, FATAL);
	}
	for (;;)
	{
		ssize_t		n = read(fd, buf + length, size - length);

		if (n < 0)
		{
			if (errno == EINTR)
				continue;
			FailOnFile(fd, "read", path, FATAL);
		}
		if (n == 0)
			break;
		length += static_cast<size_t>(n);
		if (length == size)
			break;
	}
	close(fd);
	return static_cast<ssize_t>(length);
}

bool
ReadStateFile(const char *path, const char *what, int64 *values, int count,
			  const char *hint)
{
	char		buf[kStateFileBufferSize];
	char		problem[kStateProblemSize];
	ssize_t		length = ReadWholeFile(path, buf, sizeof(buf));

	if (length < 0)
		return false;
	if (static_cast<size_t>(length) == sizeof(buf))
		ReportCorruptStateFile(path, what, "The file is longer than any valid content.",
							   hint);
	Assert(count >= 1 && count <= kMaxStateFields);
	if (!snowflake::ParseStateLine(buf, static_cast<size_t>(length), values, count,
								   problem))
		ReportCorruptStateFile(path, what, problem, hint);
	return true;
}

bool
WriteStateFile(const char *path, const int64 *values, int count, int elevel)
{
	char		temporary[MAXPGPATH];
	char		content[kStateFileBufferSize];
	size_t		length = 0;

	Assert(count >= 1 && count <= kMaxStateFields);
	for (int i = 0; i < count; i++)
		length += snprintf(content + length, sizeof(content) - length, "%s%lld",
						   i == 0 ? "" : " ", static_cast<long long>(values[i]));
	content[length++] = '\n';

	if (snprintf(temporary, sizeof(temporary), "%s.tmp", path) >= MAXPGPATH)
	{
		errno = ENAMETOOLONG;
		FailOnFile(-1, "create", path, elevel);
		return false;
	}

	int			fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC, pg_file_create_mode);

	if (fd < 0)
		return FailOnFile(fd, "create", temporary, elevel);
	errno = 0;
	if (write(fd, content, length) != static_cast<ssize_t>(length))
	{
		if (errno == 0)
			errno = ENOSPC;
		FailOnFile(fd, "write", temporary, elevel);
		return false;
	}
	if (fsync(fd) != 0)
		return FailOnFile(fd, "fsync", temporary, elevel);
	if (close(fd) != 0)
		return FailOnFile(-1, "close", temporary, elevel);
	if (rename(temporary, path) != 0)
		return FailOnFile(-1, "rename", temporary, elevel);

	int			dir = open(DataDir, O_RDONLY);

	if (dir < 0 || fsync(dir) != 0)
		return FailOnFile(dir, "fsync", DataDir, elevel);
	close(dir);
	return true;
}
