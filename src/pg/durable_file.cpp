/*
 * durable_file.cpp
 *	  Plain POSIX I/O for the extension's state files.  Usable in the
 *	  postmaster (before fd.c is set up), the startup process and backends;
 *	  no descriptor stays open across an ereport.
 */
#include "postgres_headers.hpp"

#include <cerrno>
#include <fcntl.h>
#include <unistd.h>

#include "durable_file.hpp"

char *
DataDirectoryFile(const char *name)
{
	return psprintf("%s/%s", DataDir, name);
}

/* Closes fd (if open) keeping errno, then reports "what" on "path". */
static void
FailOnFile(int fd, const char *what, const char *path, int elevel)
{
	int			saved_errno = errno;

	if (fd >= 0)
		close(fd);
	errno = saved_errno;
	ereport(elevel,
			(errcode_for_file_access(),
			 errmsg("could not %s file \"%s\": %m", what, path)));
}

bool
ReadSmallFile(const char *path, char *buf, size_t size, int elevel)
{
	int			fd = open(path, O_RDONLY);

	if (fd < 0)
	{
		if (errno == ENOENT)
			return false;
		FailOnFile(fd, "open", path, elevel);
		return false;
	}

	ssize_t		n = read(fd, buf, size - 1);

	if (n < 0)
	{
		FailOnFile(fd, "read", path, elevel);
		return false;
	}
	close(fd);
	buf[n] = '\0';
	return true;
}

void
WriteFileDurably(const char *path, const char *content, int elevel)
{
	char	   *temporary = psprintf("%s.tmp", path);
	size_t		length = strlen(content);
	int			fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC, pg_file_create_mode);

	if (fd < 0)
		FailOnFile(fd, "create", temporary, elevel);
	if (write(fd, content, length) != static_cast<ssize_t>(length))
	{
		if (errno == 0)
			errno = ENOSPC;
		FailOnFile(fd, "write", temporary, elevel);
	}
	if (fsync(fd) != 0)
		FailOnFile(fd, "fsync", temporary, elevel);
	if (close(fd) != 0)
		FailOnFile(-1, "close", temporary, elevel);
	if (rename(temporary, path) != 0)
		FailOnFile(-1, "rename", temporary, elevel);

	int			dir = open(DataDir, O_RDONLY);

	if (dir < 0 || fsync(dir) != 0)
		FailOnFile(dir, "fsync", DataDir, elevel);
	close(dir);
	pfree(temporary);
}
