/*
 * lease_client.cpp
 *	  Leases a worker id from the database, generates Snowflake IDs in
 *	  process, and releases the lease: the command-line program the tests
 *	  drive, and the usage example of snowflake_lease_pq.hpp.
 *
 *	  lease_client --dsn DSN --holder TEXT [--ttl SECONDS] [--count N]
 *				   [--rate PER_SEC] [--out FILE] [--hold-ms MS] [--no-release]
 *				   [--clock-offset-ms MS] [--wait-stdin]
 *				   [--acquire-in autocommit|transaction|cursor|pipeline]
 *
 * stdout: "lease worker_id=W node_id=N token=T not_before=MS not_after=MS"
 * once the lease is taken, the IDs (one decimal per line) unless --out
 * names a file, "holding" once the IDs are written and --hold-ms has passed
 * if --wait-stdin is given (the lease is then kept, renewed, until a line
 * or the end of input arrives on stdin), then "released last_id=X" (X is
 * "none" if no ID was issued) or "not released".
 * --acquire-in: how the grant's statement runs (AcquireIn): alone (the
 * default), in a transaction that then rolls back, through a cursor in a
 * transaction that then rolls back, or in a pipeline with a failing
 * statement after it.  The lease is used the same way in every case.
 * Exit status: 0 success, 1 error ("error: SQLSTATE <code>: <message>" on
 * stderr), 2 usage, 3 lease lost ("lease lost: <reason>" on stderr).
 * stderr also gets "warning: renewal failed: ..." for each transient
 * renewal failure, and "warning: SQLSTATE 01000: ..." when a server before
 * 1.5 reported that the release is not known to be replicated to the
 * synchronous standby.  A cancelled lease call (SQLSTATE 57014, also
 * during the server's wait for synchronous standbys) is an error like any
 * other: status 1.
 */
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "snowflake_lease_pq.hpp"

namespace {

using snowflake_lease::AcquireIn;
using snowflake_lease::Error;
using snowflake_lease::Lease;
using snowflake_lease::LeaseOptions;
using snowflake_lease::Status;

constexpr int kExitOk = 0;
constexpr int kExitError = 1;
constexpr int kExitUsage = 2;
constexpr int kExitLost = 3;

struct Args
{
	std::string dsn;
	std::string holder;
	std::optional<int64_t> ttl_seconds;
	int64_t count = 1000;
	double rate = 0; /* IDs per second; 0: as fast as possible */
	std::string out;
	int64_t hold_ms = 0;
	bool release = true;
	int64_t clock_offset_ms = 0;
	bool wait_stdin = false;
	AcquireIn acquire_in = AcquireIn::kAutocommit;
};

void
PrintUsage(FILE *to)
{
	fprintf(
		to,
		"usage: lease_client --dsn DSN --holder TEXT [--ttl SECONDS] [--count N]\n"
		"                    [--rate PER_SEC] [--out FILE] [--hold-ms MS] [--no-release]\n"
		"                    [--clock-offset-ms MS] [--wait-stdin]\n"
		"                    [--acquire-in autocommit|transaction|cursor|pipeline]\n");
}

bool
ParseInt64(const std::string &text, int64_t *value)
{
	char *end;

	errno = 0;
	long long v = strtoll(text.c_str(), &end, 10);

	if (text.empty() || errno != 0 || *end != '\0')
		return false;
	*value = v;
	return true;
}

bool
ParseDouble(const std::string &text, double *value)
{
	char *end;

	errno = 0;
	double v = strtod(text.c_str(), &end);

	if (text.empty() || errno != 0 || *end != '\0')
		return false;
	*value = v;
	return true;
}

/* Fills *args; false (after a message on stderr) on a usage error. */
bool
ParseArgs(int argc, char **argv, Args *args)
{
	bool have_dsn = false;
	bool have_holder = false;

	for (int i = 1; i < argc; i++)
	{
		std::string arg = argv[i];
		std::string value;
		bool has_value = false;
		size_t eq = arg.find('=');

		/* "--name=value" as well as "--name value". */
		if (arg.compare(0, 2, "--") == 0 && eq != std::string::npos)
		{
			value = arg.substr(eq + 1);
			arg = arg.substr(0, eq);
			has_value = true;
		}
		if (arg == "--no-release" || arg == "--wait-stdin")
		{
			if (has_value)
			{
				fprintf(stderr, "lease_client: %s takes no value\n", arg.c_str());
				return false;
			}
			if (arg == "--no-release")
				args->release = false;
			else
				args->wait_stdin = true;
			continue;
		}
		if (arg != "--dsn" && arg != "--holder" && arg != "--ttl" && arg != "--count" &&
			arg != "--rate" && arg != "--out" && arg != "--hold-ms" &&
			arg != "--clock-offset-ms" && arg != "--acquire-in")
		{
			fprintf(stderr, "lease_client: unknown argument \"%s\"\n", argv[i]);
			return false;
		}
		if (!has_value)
		{
			if (i + 1 >= argc)
			{
				fprintf(stderr, "lease_client: %s needs a value\n", arg.c_str());
				return false;
			}
			value = argv[++i];
		}

		bool ok = true;

		if (arg == "--dsn")
		{
			args->dsn = value;
			have_dsn = true;
		}
		else if (arg == "--holder")
		{
			args->holder = value;
			have_holder = true;
		}
		else if (arg == "--ttl")
		{
			int64_t ttl;

			ok = ParseInt64(value, &ttl);
			if (ok)
				args->ttl_seconds = ttl;
		}
		else if (arg == "--count")
			ok = ParseInt64(value, &args->count) && args->count >= 0;
		else if (arg == "--rate")
			ok = ParseDouble(value, &args->rate) && args->rate > 0;
		else if (arg == "--out")
			ok = !value.empty() && (args->out = value, true);
		else if (arg == "--hold-ms")
			ok = ParseInt64(value, &args->hold_ms) && args->hold_ms >= 0;
		else if (arg == "--clock-offset-ms")
			ok = ParseInt64(value, &args->clock_offset_ms);
		else if (arg == "--acquire-in")
		{
			if (value == "autocommit")
				args->acquire_in = AcquireIn::kAutocommit;
			else if (value == "transaction")
				args->acquire_in = AcquireIn::kRolledBackTransaction;
			else if (value == "cursor")
				args->acquire_in = AcquireIn::kRolledBackCursor;
			else if (value == "pipeline")
				args->acquire_in = AcquireIn::kFailedPipeline;
			else
				ok = false;
		}
		if (!ok)
		{
			fprintf(stderr, "lease_client: invalid value \"%s\" for %s\n", value.c_str(),
					arg.c_str());
			return false;
		}
	}
	if (!have_dsn || !have_holder)
	{
		fprintf(stderr, "lease_client: --dsn and --holder are required\n");
		return false;
	}
	return true;
}

void
PrintError(const Error &error)
{
	if (error.sqlstate.empty())
		fprintf(stderr, "error: %s\n", error.message.c_str());
	else
		fprintf(stderr, "error: SQLSTATE %s: %s\n", error.sqlstate.c_str(),
				error.message.c_str());
}

int
LeaseLost(const std::string &reason)
{
	fprintf(stderr, "lease lost: %s\n", reason.c_str());
	return kExitLost;
}

/* Writes count IDs to out; an exit status, or -1 to go on. */
int
Generate(Lease &lease, const Args &args, FILE *out)
{
	using Steady = std::chrono::steady_clock;
	const Steady::time_point start = Steady::now();

	for (int64_t i = 0; i < args.count; i++)
	{
		int64_t id;

		if (args.rate > 0)
			std::this_thread::sleep_until(
				start +
				std::chrono::duration_cast<Steady::duration>(
					std::chrono::duration<double>(static_cast<double>(i) / args.rate)));

		Status status = lease.Next(&id);

		if (status == Status::kLost)
			return LeaseLost(lease.LostReason());
		if (status != Status::kIssued)
		{
			fprintf(stderr, "error: %s\n", snowflake_lease::StatusName(status));
			return kExitError;
		}
		if (fprintf(out, "%" PRId64 "\n", id) < 0 || (args.rate > 0 && fflush(out) != 0))
		{
			fprintf(stderr, "error: could not write an ID: %s\n", strerror(errno));
			return kExitError;
		}
	}
	if (fflush(out) != 0)
	{
		fprintf(stderr, "error: could not write the IDs: %s\n", strerror(errno));
		return kExitError;
	}
	return -1;
}

/* Keeps the lease, renewing, for hold_ms; an exit status, or -1 to go on. */
int
Hold(Lease &lease, int64_t hold_ms)
{
	using Steady = std::chrono::steady_clock;
	const Steady::time_point end = Steady::now() + std::chrono::milliseconds(hold_ms);

	for (;;)
	{
		if (lease.Lost())
			return LeaseLost(lease.LostReason());

		Steady::time_point now = Steady::now();

		if (now >= end)
			return -1;
		std::this_thread::sleep_for(
			std::min<Steady::duration>(end - now, std::chrono::milliseconds(10)));
	}
}

/*
 * Keeps the lease, renewing, until stdin has a line or ends; an exit
 * status, or -1 to go on.
 */
int
HoldUntilStdin(Lease &lease)
{
	printf("holding\n");
	fflush(stdout);
	for (;;)
	{
		if (lease.Lost())
			return LeaseLost(lease.LostReason());

		struct pollfd in = {STDIN_FILENO, POLLIN, 0};
		int ready = poll(&in, 1, 10);

		if (ready < 0 && errno != EINTR)
		{
			fprintf(stderr, "error: could not wait for stdin: %s\n", strerror(errno));
			return kExitError;
		}
		if (ready > 0)
		{
			char c;
			ssize_t n = read(STDIN_FILENO, &c, 1);

			/* The end of a line, the end of input, or an error. */
			if (n <= 0 || c == '\n' || (in.revents & (POLLHUP | POLLERR)))
				return -1;
		}
	}
}

int
Finish(Lease &lease, const Args &args)
{
	if (!args.release)
	{
		lease.Abandon();
		printf("not released\n");
		fflush(stdout);
		return kExitOk;
	}

	std::optional<int64_t> last = lease.LastId();
	bool released;
	Error error;

	if (!lease.Release(&released, &error))
	{
		if (lease.Lost())
			return LeaseLost(lease.LostReason());
		PrintError(error);
		return kExitError;
	}
	/* A note: the release is not known to be replicated (harmless). */
	if (!error.message.empty())
		fprintf(stderr, "warning: %s\n", error.ToString().c_str());
	if (!released)
	{
		printf("not released\n");
		fflush(stdout);
		return LeaseLost("snowflake_release_lease() returned false");
	}
	if (last)
		printf("released last_id=%" PRId64 "\n", *last);
	else
		printf("released last_id=none\n");
	fflush(stdout);
	return kExitOk;
}

int
Run(const Args &args)
{
	LeaseOptions options;
	Error error;

	options.conninfo = args.dsn;
	options.holder = args.holder;
	options.ttl_seconds = args.ttl_seconds;
	options.clock_offset_ms = args.clock_offset_ms;
	options.acquire_in = args.acquire_in;
	options.on_renew_error = [](const Error &e) {
		fprintf(stderr, "warning: renewal failed: %s\n", e.ToString().c_str());
	};

	std::unique_ptr<Lease> lease = Lease::Acquire(options, &error);

	if (!lease)
	{
		PrintError(error);
		return kExitError;
	}

	const snowflake_lease::Grant &grant = lease->grant();

	printf("lease worker_id=%u node_id=%u token=%" PRId64 " not_before=%" PRId64
		   " not_after=%" PRId64 "\n",
		   grant.worker_id, grant.node_id, grant.token, grant.not_before_ms,
		   grant.not_after_ms);
	fflush(stdout);

	FILE *out = stdout;

	if (!args.out.empty())
	{
		out = fopen(args.out.c_str(), "w");
		if (out == nullptr)
		{
			fprintf(stderr, "error: could not open \"%s\": %s\n", args.out.c_str(),
					strerror(errno));
			return kExitError;
		}
	}

	int status = Generate(*lease, args, out);

	if (out != stdout && fclose(out) != 0 && status < 0)
	{
		fprintf(stderr, "error: could not write \"%s\": %s\n", args.out.c_str(),
				strerror(errno));
		status = kExitError;
	}
	if (status >= 0)
		return status;
	status = Hold(*lease, args.hold_ms);
	if (status >= 0)
		return status;
	if (args.wait_stdin)
	{
		status = HoldUntilStdin(*lease);
		if (status >= 0)
			return status;
	}
	return Finish(*lease, args);
}

} /* namespace */

int
main(int argc, char **argv)
{
	Args args;

	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
		{
			PrintUsage(stdout);
			return kExitOk;
		}
	if (!ParseArgs(argc, argv, &args))
	{
		PrintUsage(stderr);
		return kExitUsage;
	}
	return Run(args);
}
