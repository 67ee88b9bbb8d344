/*
 * split_brain.cpp
 *	  A promoted standby and its still-running old primary notice each
 *	  other through physical replication (split_brain.hpp).
 *
 * The probe adds replication=true (a walsender: no database, no SQL) and
 * our application name to the server's own primary_conninfo; SIGTERM ends
 * a wait.  Plain C structs only: libpq reports errors by return value, so
 * no longjmp crosses a C++ frame here.
 */
extern "C"
{
#include "postgres.h"

#include "access/xlog.h"		/* GetSystemIdentifier, RecoveryInProgress */
#include "access/xlogrecovery.h" /* PrimaryConnInfo */
#include "miscadmin.h"			/* has_rolreplication, B_WAL_SENDER */
#include "storage/latch.h"      /* WL_SOCKET_READABLE */
#include "utils/backend_status.h"
#include "utils/builtins.h" /* uuid_out */
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "libpq-fe.h"
}

#include <cstdio>
#include <cstdlib>

#include "pg/registry/split_brain.hpp"
#include "pg/settings.hpp"
#include "pg/worker_exit.hpp"

const char *const kSplitBrainHint =
	"Stop the old primary: a standby promoted while its old primary runs must not "
	"generate beside it (changing either node_id with live leases is no fix).";

namespace {

/* The probe's connection, kept across rounds, and the conninfo it used. */
PGconn	   *old_primary = nullptr;
char	   *connected_conninfo = nullptr;
bool		reported_failure = false;

/*
 * Bounded: a round waits at most this long for the connection, and as
 * long again for the answers.  The old primary may stop answering on an
 * open connection (stopped, frozen, cut off by a partition that drops
 * packets): a blocking libpq call would then hold the registry, its
 * heartbeats and a fast shutdown until TCP gives up, or for ever.
 */
constexpr long kProbeTimeoutMs = 2000;

/*
 * Waits for "socket_events" on the connection's socket until "deadline";
 * false at the deadline.  SIGTERM ends the worker here (worker_exit.hpp).
 */
bool
WaitForOldPrimary(int socket_events, TimestampTz deadline)
{
	for (;;)
	{
		long left = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);

		if (left <= 0)
			return false;
		if (WaitForSocketOrExit(socket_events, PQsocket(old_primary), left) & socket_events)
			return true;
	}
}

void
FormatInstanceId(const pg_uuid_t *id, char *out, size_t size)
{
	strlcpy(out, DatumGetCString(DirectFunctionCall1(uuid_out, UUIDPGetDatum(id))), size);
}

/*
 * "snowflake node <id> <instance>": under NAMEDATALEN, so the walsender
 * keeps it whole.
 */
void
FormatApplicationName(SharedState *state, char *out, size_t size)
{
	char		instance[40];

	FormatInstanceId(&state->instance_id, instance, sizeof(instance));
	snprintf(out, size, "snowflake node %d %s", g_settings.node_id, instance);
}

void
Disconnect(void)
{
	if (old_primary != nullptr)
		PQfinish(old_primary);
	old_primary = nullptr;
	if (connected_conninfo != nullptr)
		pfree(connected_conninfo);
	connected_conninfo = nullptr;
}

/*
 * Logs a failed query ("command") or connection (NULL) and disconnects;
 * once until a probe succeeds: a stopped old primary is the normal case.
 */
void
ReportNoAnswer(const char *command, const char *why)
{
	if (!reported_failure && command != nullptr)
		ereport(LOG,
				(errmsg("snowflake registry: the server in primary_conninfo did not answer "
						"\"%s\": %s",
						command, why)));
	else if (!reported_failure)
		ereport(LOG,
				(errmsg("snowflake registry: no replication connection to the "
						"server in primary_conninfo: %s",
						why)));
	reported_failure = true;
	Disconnect();
}

/*
 * The first column of the only row of "command", sent and read without
 * blocking; false (then disconnected) on an error or at "deadline".
 */
bool
AskOne(const char *command, char *out, size_t size, TimestampTz deadline)
{
	const char *const kTimedOut = "no answer within the probe's timeout (2 s)";
	PGresult *last = nullptr;
	int unsent;

	if (!PQsendQuery(old_primary, command))
	{
		ReportNoAnswer(command, PQerrorMessage(old_primary));
		return false;
	}
	while ((unsent = PQflush(old_primary)) == 1)
		if (!WaitForOldPrimary(WL_SOCKET_WRITEABLE, deadline))
		{
			ReportNoAnswer(command, kTimedOut);
			return false;
		}
	/* The last result counts: drain them all, as PQexec() does. */
	for (PGresult *result = nullptr; unsent == 0;)
	{
		while (PQisBusy(old_primary))
			if (!WaitForOldPrimary(WL_SOCKET_READABLE, deadline) ||
				!PQconsumeInput(old_primary))
			{
				PQclear(last);
				ReportNoAnswer(command,
							   PQstatus(old_primary) == CONNECTION_BAD ?
								   PQerrorMessage(old_primary) :
								   kTimedOut);
				return false;
			}
		if ((result = PQgetResult(old_primary)) == nullptr)
			break;
		PQclear(last);
		last = result;
	}

	bool ok = last != nullptr && PQresultStatus(last) == PGRES_TUPLES_OK &&
		PQntuples(last) == 1 && PQnfields(last) >= 1;

	if (ok)
		strlcpy(out, PQgetvalue(last, 0, 0), size);
	PQclear(last);
	if (!ok)
		ReportNoAnswer(command, PQerrorMessage(old_primary));
	return ok;
}

/* Connects without blocking (libpq's PQconnectPoll), bounded by kProbeTimeoutMs. */
bool
Connect(SharedState *state)
{
	char		application_name[NAMEDATALEN];
	/* Later keywords override those of the expanded primary_conninfo. */
	const char *keywords[] = {"dbname", "replication", "application_name", nullptr};
	const char *values[] = {PrimaryConnInfo, "true", application_name, nullptr};
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													   kProbeTimeoutMs);

	FormatApplicationName(state, application_name, sizeof(application_name));
	old_primary = PQconnectStartParams(keywords, values, 1);
	if (old_primary == nullptr)
	{
		ReportNoAnswer(nullptr, "out of memory");
		return false;
	}
	for (PostgresPollingStatusType polling = PGRES_POLLING_WRITING;;
		 polling = PQconnectPoll(old_primary))
	{
		if (PQstatus(old_primary) == CONNECTION_BAD || polling == PGRES_POLLING_FAILED)
		{
			ReportNoAnswer(nullptr, PQerrorMessage(old_primary));
			return false;
		}
		if (polling == PGRES_POLLING_OK)
			break;
		if (!WaitForOldPrimary(polling == PGRES_POLLING_READING ? WL_SOCKET_READABLE :
																  WL_SOCKET_WRITEABLE,
							   deadline))
		{
			ReportNoAnswer(nullptr, "no connection within the probe's timeout (2 s)");
			return false;
		}
	}
	connected_conninfo = MemoryContextStrdup(TopMemoryContext, PrimaryConnInfo);
	return true;
}

}							/* namespace */

bool
ProbeOldPrimary(SharedState *state, SplitBrainPeer *peer)
{
	char		system[32];
	char		node_id[16];
	char		standby[16];

	if (RecoveryInProgress() || PrimaryConnInfo == nullptr || PrimaryConnInfo[0] == '\0')
	{
		Disconnect();
		return false;
	}
	/* A reload changed primary_conninfo: connect to the new server. */
	if (connected_conninfo != nullptr && strcmp(connected_conninfo, PrimaryConnInfo) != 0)
		Disconnect();
	if (old_primary == nullptr && !Connect(state))
		return false;
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													   kProbeTimeoutMs);

	if (!AskOne("IDENTIFY_SYSTEM", system, sizeof(system), deadline) ||
		!AskOne("SHOW snowflake.node_id", node_id, sizeof(node_id), deadline) ||
		!AskOne("SHOW in_hot_standby", standby, sizeof(standby), deadline))
		return false;
	reported_failure = false;
	/*
	 * A connection that found nothing (a standby, another system or node id)
	 * is not kept: primary_conninfo may list several hosts, or an address
	 * that moves, and the next round must try the first one again.
	 */
	if (strtoull(system, nullptr, 10) != GetSystemIdentifier() ||
		atoi(node_id) != g_settings.node_id || strcmp(standby, "off") != 0)
	{
		Disconnect();
		return false;
	}

	peer->split_brain = true;
	strlcpy(peer->client,
			"the server in primary_conninfo, which this one was promoted from, runs as a "
			"primary",
			sizeof(peer->client));
	snprintf(peer->log, sizeof(peer->log),
			 "the server in primary_conninfo (host %s port %s, system %s), which this one "
			 "was promoted from, runs as a primary",
			 PQhost(old_primary), PQport(old_primary), system);
	return true;
}

namespace {

/* The "i"th (from 1) walsender's status in this transaction's snapshot, or NULL. */
PgBackendStatus *
Walsender(int i)
{
#if PG_VERSION_NUM >= 170000
	LocalPgBackendStatus *local = pgstat_get_local_beentry_by_index(i);
#else
	LocalPgBackendStatus *local = pgstat_fetch_stat_local_beentry(i);
#endif
	if (local == nullptr || local->backendStatus.st_backendType != B_WAL_SENDER ||
		local->backendStatus.st_appname == nullptr)
		return nullptr;
	return &local->backendStatus;
}

}							/* namespace */

bool
ProbeReachesSelf(SharedState *state)
{
	char		application_name[NAMEDATALEN];
	int			count = pgstat_fetch_stat_numbackends();
	int			pid = old_primary != nullptr ? PQbackendPID(old_primary) : 0;

	FormatApplicationName(state, application_name, sizeof(application_name));
	for (int i = 1; i <= count; i++)
	{
		PgBackendStatus *backend = Walsender(i);

		if (backend != nullptr && backend->st_procpid == pid &&
			strcmp(backend->st_appname, application_name) == 0)
		{
			/* Not kept either: it would hide a later host and hold a walsender. */
			Disconnect();
			return true;
		}
	}
	return false;
}

bool
FindPromotedWalsender(SharedState *state, SplitBrainPeer *peer)
{
	char		mine[40];
	int			count = pgstat_fetch_stat_numbackends();

	FormatInstanceId(&state->instance_id, mine, sizeof(mine));
	for (int i = 1; i <= count; i++)
	{
		PgBackendStatus *backend = Walsender(i);
		if (backend == nullptr)
			continue;

		int			node_id;
		char		instance[40];
		char		tail;

		if (sscanf(backend->st_appname, "snowflake node %d %36s%c", &node_id, instance,
				   &tail) != 2 ||
			node_id != g_settings.node_id || strcmp(instance, mine) == 0)
			continue;
		/* Only a role that may stream WAL anyway can name itself a promoted copy. */
		if (!has_rolreplication(backend->st_userid))
			continue;
		peer->split_brain = true;
		snprintf(peer->client, sizeof(peer->client),
				 "instance %s, promoted from this server, runs as a primary", instance);
		snprintf(peer->log, sizeof(peer->log),
				 "instance %s, promoted from this server, runs as a primary (it connected "
				 "by replication, walsender pid %d)",
				 instance, backend->st_procpid);
		return true;
	}
	return false;
}
