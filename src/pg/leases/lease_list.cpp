/*
 * lease_list.cpp
 *	  snowflake_lease_list(): the rows of the view snowflake_leases, one per
 *	  worker id of the lease space ever leased (README.md).
 *
 * A lease state file may hold any bytes in its text (grants refuse them,
 * older builds did not): each byte outside printable ASCII shows as '?', on
 * every version, as PostgreSQL 15 shows a non-ASCII application_name.
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
#include "pg/clock_watch.hpp"
#include "pg/leases/lease_table.hpp"
#include "pg/timestamps.hpp"

extern "C"
{
PG_FUNCTION_INFO_V1(snowflake_lease_list);
}

/* The columns of snowflake_lease_list(), as snowflake--1.6.sql declares them. */
static constexpr int kLeaseListColumns = 17;

static const char *
StateName(LeaseState state)
{
	switch (state)
	{
		case LeaseState::kHeld:
			return "held";
		case LeaseState::kReleased:
			return "released";
		case LeaseState::kExpired:
			return "expired";
		case LeaseState::kDisconnected:
			return "disconnected";
		case LeaseState::kNeverLeased:
			break;
	}
	return "never leased";
}

static Datum
UnixMsDatum(int64 unix_ms)
{
	return TimestampTzGetDatum(UnixMsToTimestampTz(unix_ms));
}

/* Adds the row of "entry" (a copy, whose text it cleans) to the result. */
static void
PutLeaseRow(ReturnSetInfo *rsinfo, LeaseEntry *entry, LeaseState state)
{
	LeaseImage &image = entry->image;
	const char *role = GetUserNameFromId(image.holder_role, true);
	const bool	time_scoped = image.ttl_ms > 0;
	const bool	has_address = image.client_addr[0] != '\0';
	const bool	reported = image.last_timestamp_ms != snowflake::kNoTimestamp;
	Datum		values[kLeaseListColumns];
	bool		nulls[kLeaseListColumns] = {false};
	int			i = 0;

	image.holder[sizeof(image.holder) - 1] = '\0';
	image.application_name[sizeof(image.application_name) - 1] = '\0';
	snowflake::CleanToPrintableAscii(image.holder);
	snowflake::CleanToPrintableAscii(image.application_name);

	values[i++] = Int32GetDatum(image.node_id);
	values[i++] = Int32GetDatum(static_cast<int32>(image.worker_id));
	values[i++] = Int64GetDatum(image.token);
	values[i++] = CStringGetTextDatum(StateName(state));
	values[i++] = CStringGetTextDatum(image.holder);
	nulls[i] = role == nullptr;
	values[i++] = role != nullptr ? DirectFunctionCall1(namein, CStringGetDatum(role)) :
									Datum(0);
	nulls[i] = !has_address;
	values[i++] = has_address ?
		DirectFunctionCall1(inet_in, CStringGetDatum(image.client_addr)) :
		Datum(0);
	values[i++] = CStringGetTextDatum(image.application_name);
	nulls[i] = time_scoped;
	values[i++] = Int32GetDatum(image.backend_pid);
	nulls[i] = !time_scoped;
	values[i++] = time_scoped ? IntervalMsDatum(image.ttl_ms) : Datum(0);
	values[i++] = TimestampTzGetDatum(image.granted_at);
	values[i++] = TimestampTzGetDatum(image.renewed_at);
	nulls[i] = !time_scoped;
	values[i++] = UnixMsDatum(image.not_after_ms);
	values[i++] = UnixMsDatum(image.not_before_ms);
	values[i++] = UnixMsDatum(image.not_after_ms);
	nulls[i] = !reported;
	values[i++] = reported ? UnixMsDatum(image.last_timestamp_ms) : Datum(0);
	nulls[i] = !(image.flags & kLeaseReleased);
	values[i++] = TimestampTzGetDatum(image.released_at);
	Assert(i == kLeaseListColumns);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
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

	const int64 now_ms = TrustedNowUnixMs();
	const bool sees_all = has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS);

	for (uint32 i = 0; i < table->count; i++)
	{
		LeaseState	state = StateOfLease(entries[i], now_ms);

		if (state == LeaseState::kNeverLeased)
			continue;
		if (!sees_all && !has_privs_of_role(GetUserId(), entries[i].image.holder_role))
			continue;
		PutLeaseRow(rsinfo, &entries[i], state);
	}
	return static_cast<Datum>(0);
}
