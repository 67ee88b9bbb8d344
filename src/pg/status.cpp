/*
 * status.cpp
 *	  snowflake_status() and snowflake_worker_slots(), the monitoring
 *	  functions behind the documented status output and the
 *	  snowflake_workers view (one row per session attached to a slot).
 *
 * Both read shared memory without a lock: each value is read atomically,
 * but a row may mix values from just before and just after a change.
 *
 * snowflake_workers shows every role what pg_stat_activity does (pid,
 * database, role) and, like it, a session's details (claimed_at,
 * ids_issued) only to roles with the privileges of the session's role or
 * of pg_read_all_stats.
 */
extern "C"
{
#include "postgres.h"

#include "access/htup_details.h"	/* heap_form_tuple */
#include "catalog/pg_authid.h"	/* ROLE_PG_READ_ALL_STATS */
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"			/* GetUserId */
#include "port/atomics.h"
#include "storage/spin.h"
#include "utils/acl.h"			/* has_privs_of_role */
#include "utils/builtins.h"	/* CStringGetTextDatum */
#include "utils/timestamp.h"
#include "utils/tuplestore.h"
#include "utils/uuid.h"
}

#include "core/horizon.hpp"
#include "core/layout.hpp"
#include "pg/clock.hpp"
#include "pg/clock_watch.hpp"
#include "pg/registry/clock_skew.hpp"
#include "pg/registry/registry_slots.hpp"
#include "pg/reservation/reservation.hpp"
#include "pg/settings.hpp"
#include "pg/shared_state.hpp"
#include "pg/timestamps.hpp"

extern "C"
{
PG_FUNCTION_INFO_V1(snowflake_status);
PG_FUNCTION_INFO_V1(snowflake_worker_slots);
}

/*
 * The columns of snowflake_status() in each version's declaration (1.0 to
 * 1.3, 1.6): heap_form_tuple() takes the first natts of the values, so one
 * row serves every version, as long as each only added columns at the end.
 */
static constexpr int kStatusColumns = 32;
static constexpr int kStatusColumnsByVersion[] = {12, 16, 18, 22, kStatusColumns};

/* The counters of the worker slots and the sessions attached to them. */
struct SlotCounts
{
	int32		slots_used;
	int32		slots_shared;
	int32		sessions_attached;
	uint64		ids_issued;
	uint64		overflow_waits;
	int64		furthest_unix_ms;
};

static int64
SlotLastUnixMs(WorkerSlot *slot)
{
	const snowflake::Layout &layout = g_settings.layout;
	int64		last_id = static_cast<int64>(pg_atomic_read_u64(&slot->last_id));

	return layout.epoch_ms + snowflake::Decompose(layout, last_id).timestamp;
}

static SlotCounts
CountSlots(SharedState *state)
{
	SlotCounts	counts{};

	for (uint32 worker_id = 0; worker_id < state->slot_count; worker_id++)
	{
		WorkerSlot *slot = state->Slot(worker_id);
		uint32		sessions = pg_atomic_read_u32(&slot->sessions);

		counts.slots_used += sessions > 0;
		counts.slots_shared += sessions > 1;
		counts.sessions_attached += static_cast<int32>(sessions);
		counts.ids_issued += pg_atomic_read_u64(&slot->earlier_ids);
		counts.overflow_waits += pg_atomic_read_u64(&slot->overflow_waits);
		counts.furthest_unix_ms = Max(counts.furthest_unix_ms, SlotLastUnixMs(slot));
	}
	/* What attached sessions issued is folded into their slot on detach. */
	for (uint32 i = 0; i < state->attachment_count; i++)
	{
		SessionAttachment *attachment = state->Attachment(i);

		if (pg_atomic_read_u32(&attachment->pid) != 0)
			counts.ids_issued += pg_atomic_read_u64(&attachment->ids_issued);
	}
	return counts;
}

/*
 * The horizon as a timestamptz: infinity past timestamptz's range, where a
 * layout of more than 53 timestamp bits ends.
 */
static Datum
HorizonDatum(int64 horizon_unix_ms)
{
	if (horizon_unix_ms >= END_TIMESTAMP / 1000 + kPostgresEpochUnixMs)
		return TimestampTzGetDatum(DT_NOEND);
	return TimestampTzGetDatum(UnixMsToTimestampTz(horizon_unix_ms));
}

/* The row type of the caller's declaration; ERROR for one no version had. */
static TupleDesc
StatusTupleDesc(FunctionCallInfo fcinfo)
{
	TupleDesc	tupdesc;

	if (get_call_result_type(fcinfo, nullptr, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	for (int columns : kStatusColumnsByVersion)
		if (tupdesc->natts == columns)
			return tupdesc;
	elog(ERROR, "incorrect number of output arguments");
	pg_unreachable();
}

extern "C" Datum
snowflake_status(PG_FUNCTION_ARGS)
{
	SharedState *state = RequireSharedState();
	const snowflake::Layout &layout = g_settings.layout;
	const SlotCounts counts = CountSlots(state);
	TupleDesc	tupdesc = StatusTupleDesc(fcinfo);
	Datum		values[kStatusColumns];
	bool		nulls[kStatusColumns] = {false};
	int			i = 0;

	/* 1.0 */
	values[i++] = TimestampTzGetDatum(UnixMsToTimestampTz(layout.epoch_ms));
	values[i++] = Int32GetDatum(layout.TimestampBits());
	values[i++] = Int32GetDatum(layout.node_bits);
	values[i++] = Int32GetDatum(layout.worker_bits);
	values[i++] = Int32GetDatum(layout.sequence_bits);
	values[i++] = Int32GetDatum(g_settings.node_id);
	values[i++] = Int32GetDatum(g_settings.max_drift_ms);
	values[i++] = Int32GetDatum(static_cast<int32>(state->slot_count));
	values[i++] = Int32GetDatum(counts.slots_used);
	values[i++] = Int64GetDatum(static_cast<int64>(counts.ids_issued));
	values[i++] = Int64GetDatum(static_cast<int64>(counts.overflow_waits));
	values[i++] = Int64GetDatum(
		Max(INT64CONST(0), counts.furthest_unix_ms - TrustedNowUnixMs()));
	/* 1.1 */
	nulls[i] = !state->reservation_known;
	values[i++] = TimestampTzGetDatum(
		UnixMsToTimestampTz(layout.epoch_ms + ReservedUntil(state)));
	values[i++] = Int64GetDatum(
		static_cast<int64>(pg_atomic_read_u64(&state->reservations)));
	values[i++] = Int64GetDatum(
		static_cast<int64>(pg_atomic_read_u64(&state->clock_steps_back)));
	values[i++] = Int64GetDatum(
		static_cast<int64>(pg_atomic_read_u64(&state->largest_step_back_ms)));
	/* 1.2 */
	values[i++] = UUIDPGetDatum(&state->instance_id);
	values[i++] = BoolGetDatum(
		(pg_atomic_read_u32(&state->registry_findings) & kFindingNodeCollision) != 0);
	/* 1.3 */
	values[i++] = Int32GetDatum(counts.sessions_attached);
	values[i++] = Int32GetDatum(counts.slots_shared);

	char	   *problems;
	TimestampTz last_round = RegistryStatus(state, &problems);

	nulls[i] = last_round == 0;
	values[i++] = TimestampTzGetDatum(last_round);
	nulls[i] = problems == nullptr;
	values[i++] = problems != nullptr ? CStringGetTextDatum(problems) : Datum(0);
	/* 1.6 */
	int64 now_unix_ms = TrustedNowUnixMs();

	nulls[i] = !state->reservation_known;
	values[i++] = Int64GetDatum(
		Max(INT64CONST(0), layout.epoch_ms + ReservedUntil(state) - now_unix_ms));
	values[i++] = HorizonDatum(snowflake::HorizonUnixMs(layout));
	values[i++] = Int64GetDatum(snowflake::MsUntilHorizon(layout, now_unix_ms) / 1000);
	/* 1.6: forward steps of the clock (clock_watch.hpp) */
	values[i++] = Int64GetDatum(
		static_cast<int64>(pg_atomic_read_u64(&state->clock_steps_forward)));
	values[i++] = Int64GetDatum(
		static_cast<int64>(pg_atomic_read_u64(&state->largest_step_forward_ms)));

	int64 last_step_unix_ms = static_cast<int64>(
		pg_atomic_read_u64(&state->last_clock_step_unix_ms));
	int64 pending_ms = PendingClockStepMs(state);

	nulls[i] = last_step_unix_ms == 0;
	values[i++] = TimestampTzGetDatum(UnixMsToTimestampTz(last_step_unix_ms));
	nulls[i] = pending_ms < 0;
	values[i++] = Int64GetDatum(pending_ms);
	/* 1.6: clocks compared across nodes (registry/clock_skew.hpp) */
	int32 clock_peers;
	int32 clock_skewed_peers;
	int64 clock_skew_ms;
	bool clocks_compared;

	ClockSkewStatus(state, &clock_peers, &clock_skewed_peers, &clock_skew_ms,
					&clocks_compared);
	values[i++] = Int32GetDatum(clock_peers);
	values[i++] = Int32GetDatum(clock_skewed_peers);
	nulls[i] = !clocks_compared;
	values[i++] = Int64GetDatum(clock_skew_ms);
	Assert(i == kStatusColumns);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}

/* The columns of snowflake_worker_slots(), the same in every version. */
static constexpr int kWorkerSlotColumns = 7;

extern "C" Datum
snowflake_worker_slots(PG_FUNCTION_ARGS)
{
	SharedState *state = RequireSharedState();
	ReturnSetInfo *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
	/* pg_stat_activity's test (HAS_PGSTAT_PERMISSIONS in pgstatfuncs.c). */
	bool		sees_all = has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS);

	InitMaterializedSRF(fcinfo, 0);
	for (uint32 i = 0; i < state->attachment_count; i++)
	{
		SessionAttachment *attachment = state->Attachment(i);
		uint32		pid = pg_atomic_read_u32(&attachment->pid);
		Datum		values[kWorkerSlotColumns];
		bool		nulls[kWorkerSlotColumns] = {false};
		int			column = 0;

		if (pid == 0)
			continue;
		/* The pid was written last: the fields read after it are its. */
		pg_read_barrier();

		WorkerSlot *slot = state->Slot(attachment->worker_id);
		bool		sees_details = sees_all ||
			has_privs_of_role(GetUserId(), attachment->session_user_id);

		values[column++] = Int32GetDatum(static_cast<int32>(attachment->worker_id));
		values[column++] = Int32GetDatum(static_cast<int32>(pid));
		values[column++] = ObjectIdGetDatum(attachment->database_id);
		values[column++] = ObjectIdGetDatum(attachment->user_id);
		nulls[column] = !sees_details;
		values[column++] = TimestampTzGetDatum(attachment->attached_at);
		nulls[column] = !sees_details;
		values[column++] = Int64GetDatum(
			static_cast<int64>(pg_atomic_read_u64(&attachment->ids_issued)));
		nulls[column] = pg_atomic_read_u64(&slot->last_id) == 0; /* none issued yet */
		values[column++] = TimestampTzGetDatum(UnixMsToTimestampTz(SlotLastUnixMs(slot)));
		Assert(column == kWorkerSlotColumns);

		/*
		 * Another backend that took this entry since may have mixed its
		 * fields with those checked above: skip the session that is gone.
		 */
		pg_read_barrier();
		if (pg_atomic_read_u32(&attachment->pid) != pid)
			continue;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return static_cast<Datum>(0);
}
