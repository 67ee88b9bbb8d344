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

#include "core/layout.hpp"
#include "pg/clock.hpp"
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

static int64
SlotLastUnixMs(WorkerSlot *slot)
{
	const snowflake::Layout &layout = g_settings.layout;
	int64		last_id = static_cast<int64>(pg_atomic_read_u64(&slot->last_id));

	return layout.epoch_ms + snowflake::Decompose(layout, last_id).timestamp;
}

extern "C" Datum
snowflake_status(PG_FUNCTION_ARGS)
{
	SharedState *state = RequireSharedState();
	const snowflake::Layout &layout = g_settings.layout;
	TupleDesc	tupdesc;
	Datum		values[22];
	bool		nulls[22] = {false};
	int32		slots_used = 0;
	int32		slots_shared = 0;
	int32		sessions_attached = 0;
	uint64		ids_issued = 0;
	uint64		overflow_waits = 0;
	int64		furthest_unix_ms = 0;

	for (uint32 worker_id = 0; worker_id < state->slot_count; worker_id++)
	{
		WorkerSlot *slot = state->Slot(worker_id);
		uint32		sessions = pg_atomic_read_u32(&slot->sessions);

		slots_used += sessions > 0;
		slots_shared += sessions > 1;
		sessions_attached += static_cast<int32>(sessions);
		ids_issued += pg_atomic_read_u64(&slot->earlier_ids);
		overflow_waits += pg_atomic_read_u64(&slot->overflow_waits);
		furthest_unix_ms = Max(furthest_unix_ms, SlotLastUnixMs(slot));
	}
	/* What attached sessions issued is folded into their slot on detach. */
	for (uint32 i = 0; i < state->attachment_count; i++)
	{
		SessionAttachment *attachment = state->Attachment(i);

		if (pg_atomic_read_u32(&attachment->pid) != 0)
			ids_issued += pg_atomic_read_u64(&attachment->ids_issued);
	}

	if (get_call_result_type(fcinfo, nullptr, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	values[0] = TimestampTzGetDatum(UnixMsToTimestampTz(layout.epoch_ms));
	values[1] = Int32GetDatum(layout.TimestampBits());
	values[2] = Int32GetDatum(layout.node_bits);
	values[3] = Int32GetDatum(layout.worker_bits);
	values[4] = Int32GetDatum(layout.sequence_bits);
	values[5] = Int32GetDatum(g_settings.node_id);
	values[6] = Int32GetDatum(g_settings.max_drift_ms);
	values[7] = Int32GetDatum(static_cast<int32>(state->slot_count));
	values[8] = Int32GetDatum(slots_used);
	values[9] = Int64GetDatum(static_cast<int64>(ids_issued));
	values[10] = Int64GetDatum(static_cast<int64>(overflow_waits));
	values[11] = Int64GetDatum(Max(INT64CONST(0), furthest_unix_ms - NowUnixMs()));
	values[12] = TimestampTzGetDatum(UnixMsToTimestampTz(layout.epoch_ms + ReservedUntil(state)));
	nulls[12] = !state->reservation_known;
	values[13] = Int64GetDatum(static_cast<int64>(pg_atomic_read_u64(&state->reservations)));
	values[14] = Int64GetDatum(static_cast<int64>(pg_atomic_read_u64(&state->clock_steps_back)));
	values[15] = Int64GetDatum(
		static_cast<int64>(pg_atomic_read_u64(&state->largest_step_back_ms)));
	values[16] = UUIDPGetDatum(&state->instance_id);
	values[17] = BoolGetDatum(pg_atomic_read_u32(&state->node_collision) != 0);
	values[18] = Int32GetDatum(sessions_attached);
	values[19] = Int32GetDatum(slots_shared);

	char *problems;
	TimestampTz last_round = RegistryStatus(state, &problems);

	values[20] = TimestampTzGetDatum(last_round);
	nulls[20] = last_round == 0;
	values[21] = problems != nullptr ? CStringGetTextDatum(problems) :
									   static_cast<Datum>(0);
	nulls[21] = problems == nullptr;
	/* An older SQL declaration with fewer columns takes the first ones. */
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}

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
		Datum		values[7];
		bool		nulls[7] = {false};

		if (pid == 0)
			continue;
		/* The pid was written last: the fields read after it are its. */
		pg_read_barrier();

		WorkerSlot *slot = state->Slot(attachment->worker_id);
		bool		sees_details = sees_all ||
			has_privs_of_role(GetUserId(), attachment->session_user_id);

		values[0] = Int32GetDatum(static_cast<int32>(attachment->worker_id));
		values[1] = Int32GetDatum(static_cast<int32>(pid));
		values[2] = ObjectIdGetDatum(attachment->database_id);
		values[3] = ObjectIdGetDatum(attachment->user_id);
		values[4] = TimestampTzGetDatum(attachment->attached_at);
		nulls[4] = !sees_details;
		values[5] = Int64GetDatum(static_cast<int64>(pg_atomic_read_u64(&attachment->ids_issued)));
		nulls[5] = !sees_details;
		values[6] = TimestampTzGetDatum(UnixMsToTimestampTz(SlotLastUnixMs(slot)));
		nulls[6] = pg_atomic_read_u64(&slot->last_id) == 0;	/* none issued yet */

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
