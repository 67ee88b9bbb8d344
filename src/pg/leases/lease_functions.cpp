/*
 * lease_functions.cpp
 *	  snowflake_lease_worker(), snowflake_renew_lease() and
 *	  snowflake_release_lease(): the lease API, in C, on the lease table.
 *
 * They run with their caller's rights and resolve no name: the state is
 * the lease table in shared memory (lease_table.hpp), so no object another
 * role creates, renames or drops can take part, and no table lock exists
 * for a slow caller to hold.  Each change takes the table's lock for a
 * few microseconds and is durable before the function returns; a rollback
 * of the caller's transaction undoes nothing.  The rules themselves are in
 * the core (core/lease_rules.hpp).
 *
 * Ownership is the role that took the lease (current_user, by OID); only
 * that role renews or releases it, and a superuser's release revokes it.
 */
extern "C"
{
#include "postgres.h"

#include "access/htup_details.h"	/* heap_form_tuple */
#include "access/parallel.h"		/* IsParallelWorker */
#include "access/xlog.h"		/* RecoveryInProgress */
#include "catalog/pg_type_d.h"
#include "fmgr.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"		/* pg_mbcliplen */
#include "miscadmin.h"			/* GetUserId, MyProcPid, PreventCommandIfReadOnly */
#include "nodes/primnodes.h"	/* FuncExpr */
#include "utils/builtins.h"		/* text_to_cstring */
#include "utils/guc.h"			/* application_name */
#include "utils/inet.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"
#include "utils/fmgrprotos.h"	/* inet_client_addr, inet_out */
#include "utils/acl.h"			/* get_role_oid */
}

#include <cstdio>

#include "core/holder_text.hpp"
#include "core/lease_rules.hpp"
#include "pg/clock.hpp"
#include "pg/leases/lease_table.hpp"
#include "pg/registry/registry_slots.hpp"
#include "pg/reservation/reservation.hpp"
#include "pg/settings.hpp"
#include "pg/shared_state.hpp"
#include "pg/timestamps.hpp"

extern "C"
{
PG_FUNCTION_INFO_V1(snowflake_lease_worker);
PG_FUNCTION_INFO_V1(snowflake_renew_lease);
PG_FUNCTION_INFO_V1(snowflake_release_lease);
PG_FUNCTION_INFO_V1(snowflake_lease_import_v14);
}

using snowflake::kNoTimestamp;

/*
 * timestamptz_to_str() returns a static buffer that its next call
 * overwrites, and a message shows several times: each gets a copy.
 */
static const char *
FormatTimestamp(TimestampTz ts)
{
	return pstrdup(timestamptz_to_str(ts));
}

static const char *
FormatUnixMs(int64 unix_ms)
{
	return FormatTimestamp(UnixMsToTimestampTz(unix_ms));
}

/*
 * Leases change only on a primary (a standby's table is a replica), and
 * only in the caller's own backend: a parallel worker reached through a
 * wrapper mislabelled PARALLEL SAFE would take a connection-scoped lease
 * for its own connection, which ends with the query.
 */
static void
RefuseOutsidePrimaryBackend(const char *caller)
{
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot lease snowflake worker ids during recovery"),
				 errhint("Call %s on the primary.", caller)));
	if (IsParallelWorker())
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TRANSACTION_STATE),
				 errmsg("cannot call %s in a parallel worker", caller)));
}

/*
 * A grant, renewal or release changes the server's state, durably: in a
 * read-only transaction it is refused as nextval() on a sequence is
 * (25006).  Called after RefuseOutsidePrimaryBackend(): a standby's
 * transactions are read-only too, and keep the message that says to call
 * on the primary.  The 1.4 import runs in ALTER EXTENSION, never in a
 * read-only transaction.
 */
static void
RefuseInReadOnlyTransaction(const char *caller)
{
	PreventCommandIfReadOnly(caller);
}

/*
 * A holder is printable ASCII (core/holder_text.hpp): every database of
 * the server shows it, whatever its encoding.  SQLSTATE 22021
 * (character_not_in_repertoire), not 22023 as for its length: the value
 * is a well-formed string of the database's encoding, with a character
 * outside the repertoire a holder allows, as PostgreSQL reports a character
 * that has no equivalent in an encoding.
 */
static void
RefuseHolderOutsideAscii(text *holder)
{
	const char *bytes = VARDATA_ANY(holder);
	size_t		length = VARSIZE_ANY_EXHDR(holder);
	size_t		bad = snowflake::FirstNonPrintableAscii(bytes, length);

	if (bad == length)
		return;

	unsigned int byte = static_cast<unsigned char>(bytes[bad]);

	ereport(ERROR,
			(errcode(ERRCODE_CHARACTER_NOT_IN_REPERTOIRE),
			 errmsg("a snowflake lease's holder must be printable ASCII"),
			 errdetail("Byte %zu of the holder is 0x%02X, outside printable ASCII "
					   "(0x20 to 0x7E).",
					   bad + 1, byte),
			 errhint("Every database of the server shows the holder, whatever its "
					 "encoding: describe the instance with letters, digits, spaces and "
					 "punctuation.")));
}

/*
 * The client's clock "client_time" (NULL: not checked) against the
 * database's and, if "previous_ms" is not kNoTimestamp, against the last
 * timestamp the worker id's previous holder reported.
 */
static void
CheckClientClock(const TimestampTz *client_time, int64 now_ms, int64 previous_ms)
{
	if (client_time == nullptr)
		return;

	int64		tolerance = g_settings.lease_clock_tolerance_ms;
	int64		client_ms;

	/* An infinite clock is as far off as a clock can be. */
	if (TIMESTAMP_IS_NOBEGIN(*client_time))
		client_ms = INT64_MIN / 2;
	else if (TIMESTAMP_IS_NOEND(*client_time))
		client_ms = INT64_MAX / 2;
	else
		client_ms = TimestampTzToUnixMs(*client_time);

	const char *shown = FormatTimestamp(*client_time);

	switch (snowflake::CheckClientClock(client_ms, now_ms, tolerance, previous_ms))
	{
		case snowflake::ClientClock::kOk:
			return;
		case snowflake::ClientClock::kBehind:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("the client's clock is behind the database's by more than %lld ms",
							static_cast<long long>(tolerance)),
					 errdetail("The client reported %s, before the database's clock, %s.", shown,
							   FormatUnixMs(now_ms)),
					 errhint("Synchronise the client's clock (NTP), or raise "
							 "snowflake.lease_clock_tolerance.")));
			break;
		case snowflake::ClientClock::kAhead:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("the client's clock is ahead of the database's by more than %lld ms",
							static_cast<long long>(tolerance)),
					 errdetail("The client reported %s, after the database's clock, %s.", shown,
							   FormatUnixMs(now_ms)),
					 errhint("Synchronise the client's clock (NTP), or raise "
							 "snowflake.lease_clock_tolerance.")));
			break;
		case snowflake::ClientClock::kBehindPrevious:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("the client's clock is behind the last timestamp of the worker "
							"id's previous holder by more than %lld ms",
							static_cast<long long>(tolerance)),
					 errdetail("The client reported %s; the previous holder reported an ID of %s.",
							   shown, FormatUnixMs(previous_ms)),
					 errhint("Synchronise the client's clock (NTP), then lease again.")));
			break;
	}
}

/* The layout and node this server issues under, as an image records them. */
static void
SetImageLayout(LeaseImage *image)
{
	const snowflake::Layout &layout = g_settings.layout;

	image->node_id = g_settings.node_id;
	image->layout_epoch_ms = layout.epoch_ms;
	image->layout_node_bits = static_cast<int16>(layout.node_bits);
	image->layout_worker_bits = static_cast<int16>(layout.worker_bits);
	image->layout_sequence_bits = static_cast<int16>(layout.sequence_bits);
}

/* Copies "text" into "out" ("size" bytes), cut at a character boundary. */
static void
CopyClipped(char *out, size_t size, const char *text)
{
	int			length = pg_mbcliplen(text, static_cast<int>(strlen(text)),
									  static_cast<int>(size) - 1);

	memcpy(out, text, length);
	out[length] = '\0';
}

/* The leasing connection's client address, numeric; "" for a Unix socket. */
static void
ClientAddress(char *out, size_t size)
{
	LOCAL_FCINFO(call, 0);

	InitFunctionCallInfoData(*call, nullptr, 0, InvalidOid, nullptr, nullptr);
	Datum		address = inet_client_addr(call);

	out[0] = '\0';
	if (!call->isnull)
		CopyClipped(out, size, DatumGetCString(DirectFunctionCall1(inet_out, address)));
}

static bool
IsHeld(const LeaseEntry &entry, int64 now_ms)
{
	const LeaseImage &image = entry.image;

	if (image.magic != kLeaseImageMagic || image.token == 0 || (image.flags & kLeaseReleased))
		return false;
	return image.ttl_ms > 0 ? image.not_after_ms > now_ms : entry.connected;
}

static snowflake::LeaseHistory
HistoryOf(const LeaseEntry &entry, int64 now_ms)
{
	const LeaseImage &image = entry.image;
	snowflake::LeaseHistory history{};

	history.ever_leased = image.magic == kLeaseImageMagic && image.token != 0;
	if (!history.ever_leased)
		return history;
	history.held = IsHeld(entry, now_ms);
	history.released = (image.flags & kLeaseReleased) != 0;
	history.not_before_ms = image.not_before_ms;
	history.not_after_ms = image.not_after_ms;
	history.last_timestamp_ms = image.last_timestamp_ms;
	history.free_since_ms =
		history.released ? TimestampTzToUnixMs(image.released_at) : image.not_after_ms;
	return history;
}

/* The interval of "ms" milliseconds. */
static Datum
IntervalMs(int64 ms)
{
	Interval   *interval = static_cast<Interval *>(palloc0(sizeof(Interval)));

	interval->time = ms * 1000;
	return IntervalPGetDatum(interval);
}

/*
 * The copies of one call, evaluated for one row, return one lease.
 *
 * PostgreSQL expands (snowflake_lease_worker(...)).* into one copy of the
 * call per output column (parse_target.c, ExpandRowReference, copies the
 * FuncExpr) and evaluates every copy.  Each taking a lease of its own
 * would mix a row's columns: the worker id of one lease beside the token
 * of another, whose holder renews the wrong lease while the worker id it
 * uses runs out and goes to another holder.  Every other call gets a lease
 * of its own.  The copies of one call, for one row, are known by
 *	- the memory context the call runs in (CurrentMemoryContext at entry):
 *	  the executor evaluates a row's expressions in its ExprContext's
 *	  per-tuple memory and resets it before the next row (execScan.c,
 *	  nodeResult.c, nodeProjectSet.c, execSRF.c, nodeModifyTable.c,
 *	  copyfrom.c); PL/pgSQL evaluates a simple expression in the per-tuple
 *	  memory of its ExprContext, which exec_eval_cleanup() resets after each
 *	  statement, and which each call of a function, and each block with an
 *	  EXCEPTION clause, has its own of.  A reset callback on that context
 *	  forgets the grant when the context is reset or deleted;
 *	- the call site: the parse location of the call, which the copies
 *	  share and two calls written in one statement do not;
 *	- the role, holder and ttl, so that no call gets a lease it did not ask
 *	  for.  Not the client's clock: each copy evaluates its arguments anew,
 *	  and clock_timestamp() differs from one copy to the next;
 *	- the node: each copy is one, evaluated once per row.  A node that
 *	  comes again while the grant is remembered is another evaluation (a
 *	  context that outlived a row or a statement), so it takes a lease of
 *	  its own.
 * A call without an expression (from C) never shares.  So one lease each
 * for: SELECT * FROM snowflake_lease_worker(...) (one call); a row of
 * (f()).*, through a cursor too (one per row fetched); each execution of a
 * statement, prepared or not; each loop iteration and each call of a
 * PL/pgSQL function.  Beside a set-returning function in the select list
 * one per row it makes, and one more: ProjectSet evaluates the call again
 * for the row it then finds empty, and that lease is returned to no one.
 * Two calls of one row that PostgreSQL cannot tell apart share: the calls
 * of an SQL function it inlines carry the location in its body, and stored
 * expressions (a view, a column default, a BEGIN ATOMIC body) carry none
 * (-1).  docs/leases.md says what shares a lease; test/sql/lease_calls.sql
 * shows each case.
 */
static constexpr int kMaxCallCopies = 32; /* above the 13 columns of the result */

struct RowGrant
{
	bool		valid;
	uint64		generation;		/* of the reset callback that forgets it */
	MemoryContext row_context;
	int			location;
	Oid			role;
	char		holder[kMaxHolderBytes + 1];
	int64		ttl_ms;
	int			ncopies;
	const FmgrInfo *copies[kMaxCallCopies]; /* the nodes that returned it */
	LeaseImage	image;
};

/* A reset callback of the row's context, for one grant. */
struct RowGrantReset
{
	MemoryContextCallback callback;
	uint64		generation;
};

static RowGrant row_grant;

static void
ForgetRowGrant(void *arg)
{
	/* A later grant, remembered on another context, stays. */
	if (static_cast<RowGrantReset *>(arg)->generation == row_grant.generation)
		row_grant.valid = false;
}

/* The parse location of the call; false for a call without an expression. */
static bool
CallLocation(FunctionCallInfo fcinfo, int *location)
{
	Node	   *expr = fcinfo->flinfo != nullptr ? fcinfo->flinfo->fn_expr : nullptr;

	if (expr == nullptr || !IsA(expr, FuncExpr))
		return false;
	*location = reinterpret_cast<FuncExpr *>(expr)->location;
	return true;
}

/*
 * The lease another copy of this call took for this row, if it is still
 * held; counts this copy as one it was returned to.
 */
static bool
CopyOfRowGrant(LeaseTable *table, FunctionCallInfo fcinfo, MemoryContext row_context,
			   const char *holder, int64 ttl_ms)
{
	int			location;

	if (!row_grant.valid || !CallLocation(fcinfo, &location) ||
		row_grant.row_context != row_context || row_grant.location != location ||
		row_grant.role != GetUserId() || row_grant.ttl_ms != ttl_ms ||
		strcmp(row_grant.holder, holder) != 0 || row_grant.ncopies == kMaxCallCopies)
		return false;
	for (int i = 0; i < row_grant.ncopies; i++)
		if (row_grant.copies[i] == fcinfo->flinfo)
			return false;

	uint32		index = row_grant.image.worker_id - table->first_worker_id;

	LWLockAcquire(table->lock, LW_SHARED);
	bool		held = index < table->count &&
		table->entries[index].image.token == row_grant.image.token &&
		IsHeld(table->entries[index], NowUnixMs());

	LWLockRelease(table->lock);
	if (held)
		row_grant.copies[row_grant.ncopies++] = fcinfo->flinfo;
	return held;
}

static void
RememberRowGrant(FunctionCallInfo fcinfo, MemoryContext row_context, const char *holder,
				 int64 ttl_ms, const LeaseImage &image)
{
	int			location;

	if (!CallLocation(fcinfo, &location))
		return;

	RowGrantReset *reset = static_cast<RowGrantReset *>(
		MemoryContextAllocZero(row_context, sizeof(RowGrantReset)));

	row_grant.generation++;
	reset->generation = row_grant.generation;
	reset->callback.func = ForgetRowGrant;
	reset->callback.arg = reset;
	MemoryContextRegisterResetCallback(row_context, &reset->callback);
	row_grant.valid = true;
	row_grant.row_context = row_context;
	row_grant.location = location;
	row_grant.role = GetUserId();
	row_grant.ttl_ms = ttl_ms;
	strlcpy(row_grant.holder, holder, sizeof(row_grant.holder));
	row_grant.ncopies = 1;
	row_grant.copies[0] = fcinfo->flinfo;
	row_grant.image = image;
}

static Datum
GrantResult(FunctionCallInfo fcinfo, const LeaseImage &image)
{
	const snowflake::Layout &layout = g_settings.layout;
	TupleDesc	tupdesc;
	Datum		values[13];
	bool		nulls[13] = {false};

	if (get_call_result_type(fcinfo, nullptr, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	values[0] = Int32GetDatum(static_cast<int32>(image.worker_id));
	values[1] = Int32GetDatum(image.node_id);
	values[2] = Int64GetDatum(image.token);
	values[3] = TimestampTzGetDatum(UnixMsToTimestampTz(image.not_before_ms));
	values[4] = TimestampTzGetDatum(UnixMsToTimestampTz(image.not_after_ms));
	values[5] = values[4];
	nulls[5] = image.ttl_ms == 0;
	values[6] = TimestampTzGetDatum(image.granted_at);
	values[7] = IntervalMs(image.window_ms / 3);
	values[8] = TimestampTzGetDatum(UnixMsToTimestampTz(layout.epoch_ms));
	values[9] = Int32GetDatum(layout.TimestampBits());
	values[10] = Int32GetDatum(layout.node_bits);
	values[11] = Int32GetDatum(layout.worker_bits);
	values[12] = Int32GetDatum(layout.sequence_bits);
	return HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls));
}

/* Refuses a grant: every worker id of the lease space is held. */
static void
ReportAllHeld(LeaseTable *table, int64 now_ms)
{
	int64		first_expiry = INT64_MAX;

	for (uint32 i = 0; i < table->count; i++)
		if (IsHeld(table->entries[i], now_ms) && table->entries[i].image.ttl_ms > 0)
			first_expiry = Min(first_expiry, table->entries[i].image.not_after_ms);
	LWLockRelease(table->lock);
	ereport(ERROR,
			(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
			 errmsg("all %d snowflake worker ids set aside for leases are leased",
					g_settings.lease_workers),
			 first_expiry == INT64_MAX ?
				 errdetail("Node %d sets aside %d worker ids (snowflake.lease_workers). "
						   "Every lease is held by a connection.",
						   g_settings.node_id, g_settings.lease_workers) :
				 errdetail("Node %d sets aside %d worker ids (snowflake.lease_workers). "
						   "The first time-scoped lease runs out at %s unless renewed.",
						   g_settings.node_id, g_settings.lease_workers,
						   FormatUnixMs(first_expiry)),
			 errhint("Release leases that are no longer used, or raise "
					 "snowflake.lease_workers and restart the server.")));
}

extern "C" Datum
snowflake_lease_worker(PG_FUNCTION_ARGS)
{
	const char *caller = "snowflake_lease_worker()";
	/* Where the executor evaluates this row (see RowGrant). */
	MemoryContext row_context = CurrentMemoryContext;

	RefuseOutsidePrimaryBackend(caller);
	RefuseInReadOnlyTransaction(caller);
	SharedState *state = RequireSharedState();
	LeaseTable *table = RequireLeaseTable();

	RequestRegistryOnceIfMissing();
	if (PG_ARGISNULL(0) || VARSIZE_ANY_EXHDR(PG_GETARG_TEXT_PP(0)) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("snowflake_lease_worker() needs a holder"),
				 errhint("Describe the instance that leases, such as its host, process id "
						 "and name.")));
	if (VARSIZE_ANY_EXHDR(PG_GETARG_TEXT_PP(0)) > kMaxHolderBytes)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a snowflake lease's holder must be at most %d bytes long, not %zu",
						kMaxHolderBytes, VARSIZE_ANY_EXHDR(PG_GETARG_TEXT_PP(0))),
				 errhint("Describe the instance that leases briefly, such as its host, "
						 "process id and name.")));
	RefuseHolderOutsideAscii(PG_GETARG_TEXT_PP(0));

	const char *holder = text_to_cstring(PG_GETARG_TEXT_PP(0));
	int64		ttl_ms = 0;

	/* One conversion of the ttl, kept with the lease for every renewal. */
	if (!PG_ARGISNULL(1))
	{
		Interval   *ttl = PG_GETARG_INTERVAL_P(1);

		ttl_ms = snowflake::TtlMs(ttl->month, ttl->day, ttl->time);
		/* A month has no length in ms: say how to write the ttl instead. */
		bool has_months = ttl->month != 0;

#ifdef INTERVAL_NOT_FINITE
		if (INTERVAL_NOT_FINITE(ttl))
			has_months = false;
#endif
		if (ttl_ms < 0)
			ereport(
				ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a snowflake lease's ttl must lie between 1 second and 24 hours, "
						"not %s",
						DatumGetCString(
							DirectFunctionCall1(interval_out, IntervalPGetDatum(ttl)))),
				 has_months ? errdetail("A month has no fixed number of milliseconds.") : 0,
				 has_months ?
					 errhint("Write the ttl in hours or days, for example '12 hours'.") :
					 errhint("Pass NULL for a lease held as long as the connection.")));
	}
	/*
	 * Behind a pooler a server connection outlives its clients and serves
	 * many: a lease tied to it is no client's.  The operator can refuse
	 * them for the whole server.
	 */
	if (ttl_ms == 0 && !g_settings.allow_connection_leases)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("connection-scoped snowflake leases are turned off on this server"),
				 errdetail("snowflake.allow_connection_leases is off, as behind a "
						   "transaction-mode connection pooler, where a server connection "
						   "serves many clients and outlives each of them."),
				 errhint("Pass a ttl, such as interval '1 minute', for a time-scoped "
						 "lease, and renew it with its token before it ends.")));
	if (g_settings.lease_workers == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("no snowflake worker ids are set aside for leases"),
				 errhint("Set snowflake.lease_workers in postgresql.conf and restart the "
						 "server.")));

	TimestampTz client_time = PG_ARGISNULL(2) ? 0 : PG_GETARG_TIMESTAMPTZ(2);
	const TimestampTz *client_clock = PG_ARGISNULL(2) ? nullptr : &client_time;

	CheckClientClock(client_clock, NowUnixMs(), kNoTimestamp);

	if (CopyOfRowGrant(table, fcinfo, row_context, holder, ttl_ms))
		PG_RETURN_DATUM(GrantResult(fcinfo, row_grant.image));

	const int64 floor_minus_1 = g_settings.layout.epoch_ms + GenerationFloor(state) - 1;
	const int64 window_ms = ttl_ms > 0 ? ttl_ms : g_settings.lease_connection_window_ms;
	snowflake::LeaseHistory *histories = static_cast<snowflake::LeaseHistory *>(
		palloc(sizeof(snowflake::LeaseHistory) * table->count));
	LeaseImage	image;
	XLogRecPtr	lsn;

	if (ttl_ms == 0)
		WatchConnectionLeases();

	LockLeaseTableForChange(table);
	int64		now_ms = NowUnixMs();

	for (uint32 i = 0; i < table->count; i++)
		histories[i] = HistoryOf(table->entries[i], now_ms);

	snowflake::LeaseChoice choice =
		snowflake::ChooseWorker(histories, table->count, now_ms, floor_minus_1,
								g_settings.lease_connection_window_ms);

	if (choice.outcome == snowflake::LeaseChoice::kAllHeld)
		ReportAllHeld(table, now_ms);
	if (choice.outcome == snowflake::LeaseChoice::kAllWaitTooLong)
	{
		LWLockRelease(table->lock);
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("no snowflake worker id can be leased before %s",
						FormatUnixMs(choice.not_before_ms + 1)),
				 errdetail("Every free worker id was held until then by holders that vanished "
						   "or were revoked."),
				 errhint("Lease again after that time, or raise snowflake.lease_workers and "
						 "restart the server.")));
	}

	const uint32 index = static_cast<uint32>(choice.index);
	int64		previous_ms = histories[index].ever_leased ?
		histories[index].last_timestamp_ms : kNoTimestamp;

	if (client_clock != nullptr &&
		snowflake::CheckClientClock(TimestampTzToUnixMs(client_time), now_ms,
									g_settings.lease_clock_tolerance_ms,
									previous_ms) != snowflake::ClientClock::kOk)
	{
		LWLockRelease(table->lock);
		CheckClientClock(client_clock, now_ms, previous_ms);
	}

	memset(&image, 0, sizeof(image));
	image.worker_id = table->first_worker_id + index;
	SetImageLayout(&image);
	image.token = table->last_token + 1;
	image.holder_role = GetUserId();
	if (ttl_ms == 0)
	{
		image.backend_pid = MyProcPid;
		image.backend_start = MyStartTimestamp;
		image.instance_id = state->instance_id;
	}
	image.ttl_ms = ttl_ms;
	image.window_ms = window_ms;
	image.granted_at = GetCurrentTimestamp();
	image.renewed_at = image.granted_at;
	image.not_before_ms = choice.not_before_ms;
	image.not_after_ms = snowflake::WindowEnd(now_ms, choice.not_before_ms, window_ms);
	image.last_timestamp_ms = kNoTimestamp;
	CopyClipped(image.holder, sizeof(image.holder), holder);
	CopyClipped(image.application_name, sizeof(image.application_name),
				application_name ? application_name : "");
	/* PostgreSQL's check hook made it ASCII already; the image's rule is kept here. */
	snowflake::CleanToPrintableAscii(image.application_name);
	ClientAddress(image.client_addr, sizeof(image.client_addr));

	uint64		change = CommitLeaseImage(table, index, &image, ttl_ms == 0, &lsn);

	LWLockRelease(table->lock);
	MakeLeaseChangeDurable(table, change, lsn);

	RememberRowGrant(fcinfo, row_context, holder, ttl_ms, image);
	PG_RETURN_DATUM(GrantResult(fcinfo, image));
}

/*
 * Renewal and release: the lease "token" names, with the table's lock held
 * exclusively, if the caller may change it; ERROR otherwise.  A released
 * lease is returned (the callers differ on it) after the role check.
 */
static uint32
HeldLease(LeaseTable *table, int64 token, const char *caller)
{
	uint32		index = 0;

	while (index < table->count && !(table->entries[index].image.magic == kLeaseImageMagic &&
									 table->entries[index].image.token == token))
		index++;
	if (index == table->count)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("snowflake lease %lld is not held", static_cast<long long>(token)),
				 errdetail("Node %d holds no lease with this token: the lease expired or its "
						   "connection ended, and its worker id was leased again, the server "
						   "restarted with another layout or lease space, or the token was "
						   "never granted here.",
						   g_settings.node_id),
				 errhint("Stop issuing IDs under this lease, and lease a worker id again.")));

	const LeaseEntry &entry = table->entries[index];

	if (entry.image.holder_role != GetUserId() && !superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("snowflake lease %lld belongs to another role",
						static_cast<long long>(token))));
	if (entry.image.ttl_ms == 0 && !(entry.image.flags & kLeaseReleased) &&
		!(entry.connected && entry.image.backend_pid == MyProcPid &&
		  entry.image.backend_start == MyStartTimestamp))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("snowflake lease %lld belongs to another connection",
						static_cast<long long>(token)),
				 errdetail("A connection-scoped lease is held by the connection that "
						   "took it, and ends with it."),
				 errhint("Call %s on that connection. Behind a connection pooler, "
						 "take time-scoped leases (with a ttl) instead.",
						 caller)));
	return index;
}

/* The timestamp of "last_id" (kNoTimestamp if NULL), checked against the lease. */
static int64
ReportedTimestamp(const LeaseImage &image, FunctionCallInfo fcinfo, int argno)
{
	if (PG_ARGISNULL(argno))
		return kNoTimestamp;

	int64		id = PG_GETARG_INT64(argno);
	int64		ts = 0;

	switch (snowflake::CheckReportedId(g_settings.layout, id,
									   static_cast<uint32>(image.node_id), image.worker_id,
									   image.not_before_ms, image.not_after_ms, &ts))
	{
		case snowflake::ReportedId::kOk:
			break;
		case snowflake::ReportedId::kNegative:
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("snowflake ID %lld is out of range", static_cast<long long>(id)),
					 errdetail("Snowflake IDs are never negative.")));
			break;
		case snowflake::ReportedId::kOtherWorker:
			{
				snowflake::IdParts parts = snowflake::Decompose(g_settings.layout, id);

				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("snowflake ID %lld was not issued under lease %lld",
								static_cast<long long>(id), static_cast<long long>(image.token)),
						 errdetail("It carries node id %u and worker id %u; the lease is worker "
								   "id %u of node %d.",
								   parts.node_id, parts.worker_id, image.worker_id,
								   image.node_id)));
			}
			break;
		case snowflake::ReportedId::kOutsideWindow:
			{
				snowflake::IdParts parts = snowflake::Decompose(g_settings.layout, id);

				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("snowflake ID %lld lies outside the window of lease %lld",
								static_cast<long long>(id), static_cast<long long>(image.token)),
						 errdetail("Its timestamp is %s; the lease's IDs lie after %s and "
								   "before %s.",
								   FormatUnixMs(g_settings.layout.epoch_ms + parts.timestamp),
								   FormatUnixMs(image.not_before_ms),
								   FormatUnixMs(image.not_after_ms))));
			}
			break;
	}
	return ts;
}

static int64
TokenArgument(FunctionCallInfo fcinfo, const char *caller)
{
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s needs a lease token", caller)));
	return PG_GETARG_INT64(0);
}

extern "C" Datum
snowflake_renew_lease(PG_FUNCTION_ARGS)
{
	const char *caller = "snowflake_renew_lease()";

	RefuseOutsidePrimaryBackend(caller);
	RefuseInReadOnlyTransaction(caller);
	LeaseTable *table = RequireLeaseTable();
	int64		token = TokenArgument(fcinfo, caller);
	TimestampTz client_time = PG_ARGISNULL(2) ? 0 : PG_GETARG_TIMESTAMPTZ(2);

	CheckClientClock(PG_ARGISNULL(2) ? nullptr : &client_time, NowUnixMs(), kNoTimestamp);

	LockLeaseTableForChange(table);
	uint32		index = HeldLease(table, token, caller);
	LeaseImage	image = table->entries[index].image;

	if (image.flags & kLeaseReleased)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("snowflake lease %lld was released", static_cast<long long>(token)),
				 errhint("Lease a worker id again.")));

	int64		reported = ReportedTimestamp(image, fcinfo, 1);
	int64		now_ms = NowUnixMs();
	XLogRecPtr	lsn;

	image.renewed_at = GetCurrentTimestamp();
	image.not_after_ms = Max(image.not_after_ms, now_ms + image.window_ms);
	if (reported != kNoTimestamp)
		image.last_timestamp_ms = Max(image.last_timestamp_ms, reported);

	(void) CommitLeaseImage(table, index, &image, table->entries[index].connected, &lsn);
	LWLockRelease(table->lock);
	/* Not waited for: a start after a crash settles renewals (lease_table.hpp). */
	PublishLeaseChange(lsn);

	TupleDesc	tupdesc;
	Datum		values[3];
	bool		nulls[3] = {false, image.ttl_ms == 0, false};

	if (get_call_result_type(fcinfo, nullptr, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	values[0] = TimestampTzGetDatum(UnixMsToTimestampTz(image.not_after_ms));
	values[1] = values[0];
	values[2] = TimestampTzGetDatum(image.renewed_at);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}

extern "C" Datum
snowflake_release_lease(PG_FUNCTION_ARGS)
{
	const char *caller = "snowflake_release_lease()";

	RefuseOutsidePrimaryBackend(caller);
	RefuseInReadOnlyTransaction(caller);
	LeaseTable *table = RequireLeaseTable();
	int64		token = TokenArgument(fcinfo, caller);

	LockLeaseTableForChange(table);
	uint32		index = HeldLease(table, token, caller);
	LeaseImage	image = table->entries[index].image;

	if (image.flags & kLeaseReleased)
	{
		LWLockRelease(table->lock);
		PG_RETURN_BOOL(false);
	}

	int64		reported = ReportedTimestamp(image, fcinfo, 1);
	XLogRecPtr	lsn;

	if (reported != kNoTimestamp)
		image.last_timestamp_ms = Max(image.last_timestamp_ms, reported);
	/*
	 * Another role (a superuser) revokes the lease: it cannot know what the
	 * holder issued, so the next holder starts above the whole window.
	 */
	if (image.holder_role != GetUserId())
	{
		image.last_timestamp_ms = Max(image.last_timestamp_ms, image.not_after_ms - 1);
		image.flags |= kLeaseRevoked;
	}
	image.flags |= kLeaseReleased;
	image.released_at = GetCurrentTimestamp();

	uint64		change = CommitLeaseImage(table, index, &image, false, &lsn);

	LWLockRelease(table->lock);
	/*
	 * A release lost in a crash only keeps the worker id taken until its
	 * window ends; a revocation must hold, so it is waited for.
	 */
	if (image.flags & kLeaseRevoked)
		MakeLeaseChangeDurable(table, change, lsn);
	else
		PublishLeaseChange(lsn);
	PG_RETURN_BOOL(true);
}

/* A field of a version 1.4 lease row; "isnull" set. */
static Datum
Field(HeapTupleHeader row, const char *name, bool *isnull)
{
	return GetAttributeByName(row, name, isnull);
}

/*
 * Version 1.4 to 1.5: carries one row of the old table snowflake_worker_leases
 * into the lease table, if it is this node's, of the running layout and
 * lease space, and newer than what the table holds.  Called by the update
 * script only (superuser), then dropped.  A connection-scoped lease's
 * connection cannot be watched from here: it is carried as ended, so the
 * next holder starts above its window and its holder is told at its next
 * renewal.
 */
extern "C" Datum
snowflake_lease_import_v14(PG_FUNCTION_ARGS)
{
	RefuseOutsidePrimaryBackend("ALTER EXTENSION snowflake UPDATE");
	LeaseTable *table = RequireLeaseTable();

	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("only a superuser may import snowflake leases")));

	HeapTupleHeader row = PG_GETARG_HEAPTUPLEHEADER(0);
	bool		isnull;
	int32		node_id = DatumGetInt32(Field(row, "node_id", &isnull));
	int32		worker_id = DatumGetInt32(Field(row, "worker_id", &isnull));
	int64		token = DatumGetInt64(Field(row, "token", &isnull));
	char		layout_text[96];
	const snowflake::Layout &layout = g_settings.layout;

	snprintf(layout_text, sizeof(layout_text), INT64_FORMAT "/%d/%d/%d", layout.epoch_ms,
			 layout.node_bits, layout.worker_bits, layout.sequence_bits);

	char	   *row_layout = TextDatumGetCString(Field(row, "layout", &isnull));

	if (node_id != g_settings.node_id || worker_id < static_cast<int32>(table->first_worker_id) ||
		worker_id >= static_cast<int32>(table->first_worker_id + table->count) ||
		strcmp(row_layout, layout_text) != 0)
		PG_RETURN_BOOL(false);

	LeaseImage	image;

	memset(&image, 0, sizeof(image));
	image.worker_id = static_cast<uint32>(worker_id);
	SetImageLayout(&image);
	image.token = token;
	image.holder_role = get_role_oid(NameStr(*DatumGetName(Field(row, "holder_role", &isnull))),
									 true);
	CopyClipped(image.holder, sizeof(image.holder),
				TextDatumGetCString(Field(row, "holder", &isnull)));
	Datum		value = Field(row, "application_name", &isnull);

	if (!isnull)
		CopyClipped(image.application_name, sizeof(image.application_name),
					TextDatumGetCString(value));
	/* 1.4 took any holder, in the database's encoding: kept as every database can show it. */
	snowflake::CleanToPrintableAscii(image.holder);
	snowflake::CleanToPrintableAscii(image.application_name);
	value = Field(row, "client_addr", &isnull);
	if (!isnull)
		CopyClipped(image.client_addr, sizeof(image.client_addr),
					DatumGetCString(DirectFunctionCall1(inet_out, value)));
	value = Field(row, "backend_pid", &isnull);
	image.backend_pid = isnull ? 0 : DatumGetInt32(value);
	value = Field(row, "backend_start", &isnull);
	image.backend_start = isnull ? 0 : DatumGetTimestampTz(value);
	value = Field(row, "instance_id", &isnull);
	if (!isnull)
		image.instance_id = *DatumGetUUIDP(value);
	image.window_ms = DatumGetInt64(Field(row, "window_ms", &isnull));
	(void) Field(row, "ttl", &isnull);
	image.ttl_ms = isnull ? 0 : image.window_ms;
	image.granted_at = DatumGetTimestampTz(Field(row, "granted_at", &isnull));
	image.renewed_at = DatumGetTimestampTz(Field(row, "renewed_at", &isnull));
	image.not_before_ms = DatumGetInt64(Field(row, "not_before_ms", &isnull));
	image.not_after_ms = DatumGetInt64(Field(row, "not_after_ms", &isnull));
	value = Field(row, "last_timestamp_ms", &isnull);
	image.last_timestamp_ms = isnull ? kNoTimestamp : DatumGetInt64(value);
	value = Field(row, "released_at", &isnull);
	if (!isnull)
	{
		image.released_at = DatumGetTimestampTz(value);
		image.flags |= kLeaseReleased;
	}

	uint32		index = image.worker_id - table->first_worker_id;
	XLogRecPtr	lsn;

	image.flags |= kLeaseImported;

	/*
	 * Only into a lease table that version 1.5 has not granted from yet: its
	 * tokens and windows would clash with the old table's.
	 */
	LockLeaseTableForChange(table);
	for (uint32 i = 0; i < table->count; i++)
	{
		const LeaseImage &current = table->entries[i].image;

		if (current.magic == kLeaseImageMagic && !(current.flags & kLeaseImported))
		{
			LWLockRelease(table->lock);
			ereport(WARNING,
					(errmsg("snowflake lease " INT64_FORMAT " of worker id %d, taken under "
							"version 1.4, was not carried into version 1.5",
							token, worker_id),
					 errdetail(
						 "This server leased worker ids under version 1.5 before this "
						 "database was updated."),
					 errhint(
						 "Update first the database whose 1.4 table "
						 "snowflake_worker_leases held the leases (where "
						 "snowflake.database pointed under 1.4).  The lease's holder is "
						 "told at its next renewal.")));
			PG_RETURN_BOOL(false);
		}
	}
	if (table->entries[index].image.magic == kLeaseImageMagic &&
		table->entries[index].image.token >= token)
	{
		LWLockRelease(table->lock);
		PG_RETURN_BOOL(false);
	}

	uint64		change = CommitLeaseImage(table, index, &image, false, &lsn);

	LWLockRelease(table->lock);
	MakeLeaseChangeDurable(table, change, lsn);
	PG_RETURN_BOOL(true);
}
