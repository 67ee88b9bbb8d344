/*
 * lease_list.cpp
 *	  snowflake_lease_list(): the rows of the view snowflake_leases, one per
 *	  worker id of the lease space ever leased.
 *
 * It shows a role what pg_stat_activity would: every lease to roles with
 * the privileges of pg_read_all_stats (pg_monitor has them), and to any
 * other role only the leases of roles whose privileges it has.  It runs
 * with its caller's rights and reads only shared memory.
 *
 * Every database of the server reads the same leases, whatever its
 * encoding, so the text shown is printable ASCII (core/holder_text.hpp).
 * Grants take no other holder, but a lease state written by an earlier
 * build of 1.5, from a SQL_ASCII or LATIN1 database, may hold any bytes:
 * each byte outside printable ASCII shows as '?', as PostgreSQL 15 shows a
 * non-ASCII application_name (16 and later escape it instead; this is one
 * rule on every version).
 */
extern "C"
{
#include "postgres.h"

#include "catalog/pg_authid_d.h"	/* ROLE_PG_READ_ALL_STATS */
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"			/* GetUserId, GetUserNameFromId */
#include "utils/acl.h"			/* has_privs_of_role */
#include "utils/builtins.h"		/* cstring_to_text */
#include "utils/inet.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"
}

#include "core/holder_text.hpp"
#include "core/lease_rules.hpp"
#include "pg/clock.hpp"
#include "pg/leases/lease_table.hpp"
#include "pg/timestamps.hpp"

extern "C"
{
PG_FUNCTION_INFO_V1(snowflake_lease_list);
}

static constexpr int kLeaseListColumns = 17;

static const char *
StateOf(const LeaseEntry &entry, int64 now_ms)
{
	if (entry.image.flags & kLeaseReleased)
		return "released";
	if (entry.image.ttl_ms == 0)
		return entry.connected ? "held" : "disconnected";
	return entry.image.not_after_ms > now_ms ? "held" : "expired";
}

static Datum
UnixMsDatum(int64 unix_ms)
{
	return TimestampTzGetDatum(UnixMsToTimestampTz(unix_ms));
}

extern "C" Datum
snowflake_lease_list(PG_FUNCTION_ARGS)
{
	LeaseTable *table = RequireLeaseTable();
	ReturnSetInfo *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);

	InitMaterializedSRF(fcinfo, 0);

	/* Copied under the lock, shown without it (role names need the catalog). */
	LeaseEntry *entries = static_cast<LeaseEntry *>(palloc(sizeof(LeaseEntry) * Max(table->count, 1)));

	LWLockAcquire(table->lock, LW_SHARED);
	memcpy(entries, table->entries, sizeof(LeaseEntry) * table->count);
	LWLockRelease(table->lock);

	const int64 now_ms = NowUnixMs();
	const bool sees_all = has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS);

	for (uint32 i = 0; i < table->count; i++)
	{
		const LeaseEntry &entry = entries[i];
		LeaseImage &image = entries[i].image;
		Datum		values[kLeaseListColumns];
		bool		nulls[kLeaseListColumns] = {false};

		if (image.magic != kLeaseImageMagic || image.token == 0)
			continue;
		if (!sees_all && !has_privs_of_role(GetUserId(), image.holder_role))
			continue;

		const char *role = GetUserNameFromId(image.holder_role, true);

		image.holder[sizeof(image.holder) - 1] = '\0';
		image.application_name[sizeof(image.application_name) - 1] = '\0';
		snowflake::CleanToPrintableAscii(image.holder);
		snowflake::CleanToPrintableAscii(image.application_name);
		const bool time_scoped = image.ttl_ms > 0;

		values[0] = Int32GetDatum(image.node_id);
		values[1] = Int32GetDatum(static_cast<int32>(image.worker_id));
		values[2] = Int64GetDatum(image.token);
		values[3] = CStringGetTextDatum(StateOf(entry, now_ms));
		values[4] = CStringGetTextDatum(image.holder);
		nulls[5] = role == nullptr;
		if (role != nullptr)
			values[5] = DirectFunctionCall1(namein, CStringGetDatum(role));
		nulls[6] = image.client_addr[0] == '\0';
		if (!nulls[6])
			values[6] = DirectFunctionCall1(inet_in, CStringGetDatum(image.client_addr));
		values[7] = CStringGetTextDatum(image.application_name);
		nulls[8] = time_scoped;
		values[8] = Int32GetDatum(image.backend_pid);
		nulls[9] = !time_scoped;
		if (time_scoped)
		{
			Interval   *ttl = static_cast<Interval *>(palloc0(sizeof(Interval)));

			ttl->time = image.ttl_ms * 1000;
			values[9] = IntervalPGetDatum(ttl);
		}
		values[10] = TimestampTzGetDatum(image.granted_at);
		values[11] = TimestampTzGetDatum(image.renewed_at);
		nulls[12] = !time_scoped;
		values[12] = UnixMsDatum(image.not_after_ms);
		values[13] = UnixMsDatum(image.not_before_ms);
		values[14] = UnixMsDatum(image.not_after_ms);
		nulls[15] = image.last_timestamp_ms == snowflake::kNoTimestamp;
		if (!nulls[15])
			values[15] = UnixMsDatum(image.last_timestamp_ms);
		nulls[16] = !(image.flags & kLeaseReleased);
		values[16] = TimestampTzGetDatum(image.released_at);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return static_cast<Datum>(0);
}
