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
 * Each function has one shape: validate the arguments; decide under the
 * table's lock, in one function that takes it, commits the change (if
 * any) and releases it, returning the outcome as plain data; report a
 * refusal from that outcome (no error is raised with the lock held, see
 * lease_table.hpp); make the change durable; build the row.
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
#include "utils/fmgrprotos.h"	/* inet_client_addr, inet_out */
}

#include "core/holder_text.hpp"
#include "core/lease_rules.hpp"
#include "pg/clock.hpp"
#include "pg/leases/lease_functions.hpp"
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
}

using snowflake::kNoTimestamp;

/* The columns of each function's result, as snowflake--1.5.sql declares them. */
static constexpr int kGrantColumns = 13;
static constexpr int kRenewColumns = 3;

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

void
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

/* The client's clock argument (argument "argno"; absent if NULL). */
struct ClientClockArgument
{
	bool		given;
	TimestampTz time;
};

static ClientClockArgument
ClientClockOf(FunctionCallInfo fcinfo, int argno)
{
	ClientClockArgument client_clock{};

	client_clock.given = !PG_ARGISNULL(argno);
	if (client_clock.given)
		client_clock.time = PG_GETARG_TIMESTAMPTZ(argno);
	return client_clock;
}

/*
 * The core's verdict on the client's clock against the database's "now_ms"
 * and, if "previous_ms" is not kNoTimestamp, against the last timestamp
 * the worker id's previous holder reported.  Plain computation: callable
 * under the table's lock.
 */
static snowflake::ClientClock
JudgeClientClock(const ClientClockArgument &client_clock, int64 now_ms, int64 previous_ms)
{
	if (!client_clock.given)
		return snowflake::ClientClock::kOk;

	int64		client_ms;

	/* An infinite clock is as far off as a clock can be. */
	if (TIMESTAMP_IS_NOBEGIN(client_clock.time))
		client_ms = INT64_MIN / 2;
	else if (TIMESTAMP_IS_NOEND(client_clock.time))
		client_ms = INT64_MAX / 2;
	else
		client_ms = TimestampTzToUnixMs(client_clock.time);
	return snowflake::CheckClientClock(client_ms, now_ms,
									   g_settings.lease_clock_tolerance_ms, previous_ms);
}

/* ERROR for a verdict of JudgeClientClock() other than kOk. */
static void
ReportClientClock(snowflake::ClientClock verdict, const ClientClockArgument &client_clock,
				  int64 now_ms, int64 previous_ms)
{
	long long	tolerance = static_cast<long long>(g_settings.lease_clock_tolerance_ms);

	if (verdict == snowflake::ClientClock::kBehind)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the client's clock is behind the database's by more than %lld ms",
						tolerance),
				 errdetail("The client reported %s, before the database's clock, %s.",
						   FormatTimestamp(client_clock.time), FormatUnixMs(now_ms)),
				 errhint("Synchronise the client's clock (NTP), or raise "
						 "snowflake.lease_clock_tolerance.")));
	if (verdict == snowflake::ClientClock::kAhead)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the client's clock is ahead of the database's by more than "
						"%lld ms",
						tolerance),
				 errdetail("The client reported %s, after the database's clock, %s.",
						   FormatTimestamp(client_clock.time), FormatUnixMs(now_ms)),
				 errhint("Synchronise the client's clock (NTP), or raise "
						 "snowflake.lease_clock_tolerance.")));
	if (verdict == snowflake::ClientClock::kBehindPrevious)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the client's clock is behind the last timestamp of the worker "
						"id's previous holder by more than %lld ms",
						tolerance),
				 errdetail("The client reported %s; the previous holder reported an ID "
						   "of %s.",
						   FormatTimestamp(client_clock.time), FormatUnixMs(previous_ms)),
				 errhint("Synchronise the client's clock (NTP), then lease again.")));
}

/* The client's clock against the database's, before any lock: ERROR if off. */
static void
CheckClientClock(const ClientClockArgument &client_clock)
{
	const int64 now_ms = NowUnixMs();

	ReportClientClock(JudgeClientClock(client_clock, now_ms, kNoTimestamp), client_clock,
					  now_ms, kNoTimestamp);
}

void
SetLeaseImageLayout(LeaseImage *image)
{
	const snowflake::Layout &layout = g_settings.layout;

	image->node_id = g_settings.node_id;
	image->layout_epoch_ms = layout.epoch_ms;
	image->layout_node_bits = static_cast<int16>(layout.node_bits);
	image->layout_worker_bits = static_cast<int16>(layout.worker_bits);
	image->layout_sequence_bits = static_cast<int16>(layout.sequence_bits);
}

void
CopyClippedText(char *out, size_t size, const char *text)
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
		CopyClippedText(out, size, DatumGetCString(DirectFunctionCall1(inet_out, address)));
}

static snowflake::LeaseHistory
HistoryOf(const LeaseEntry &entry, int64 now_ms)
{
	const LeaseImage &image = entry.image;
	snowflake::LeaseHistory history{};

	history.ever_leased = image.magic == kLeaseImageMagic && image.token != 0;
	if (!history.ever_leased)
		return history;
	history.held = LeaseIsHeld(entry, now_ms);
	history.released = (image.flags & kLeaseReleased) != 0;
	history.not_before_ms = image.not_before_ms;
	history.not_after_ms = image.not_after_ms;
	history.last_timestamp_ms = image.last_timestamp_ms;
	history.free_since_ms =
		history.released ? TimestampTzToUnixMs(image.released_at) : image.not_after_ms;
	return history;
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
/* Above the kGrantColumns columns of the result. */
static constexpr int kMaxCallCopies = 32;

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
		LeaseIsHeld(table->entries[index], NowUnixMs());

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
	const Datum not_after = TimestampTzGetDatum(UnixMsToTimestampTz(image.not_after_ms));
	TupleDesc	tupdesc;
	Datum		values[kGrantColumns];
	bool		nulls[kGrantColumns] = {false};
	int			i = 0;

	if (get_call_result_type(fcinfo, nullptr, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	values[i++] = Int32GetDatum(static_cast<int32>(image.worker_id));
	values[i++] = Int32GetDatum(image.node_id);
	values[i++] = Int64GetDatum(image.token);
	values[i++] = TimestampTzGetDatum(UnixMsToTimestampTz(image.not_before_ms));
	values[i++] = not_after;
	nulls[i] = image.ttl_ms == 0; /* expires_at: only a time-scoped lease expires */
	values[i++] = not_after;
	values[i++] = TimestampTzGetDatum(image.granted_at);
	values[i++] = IntervalMsDatum(image.window_ms / 3);
	values[i++] = TimestampTzGetDatum(UnixMsToTimestampTz(layout.epoch_ms));
	values[i++] = Int32GetDatum(layout.TimestampBits());
	values[i++] = Int32GetDatum(layout.node_bits);
	values[i++] = Int32GetDatum(layout.worker_bits);
	values[i++] = Int32GetDatum(layout.sequence_bits);
	Assert(i == kGrantColumns);
	return HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls));
}

/* A grant's arguments, checked. */
struct GrantRequest
{
	const char *holder;
	int64		ttl_ms;			/* 0: connection-scoped */
	ClientClockArgument client_clock;
};

/* The holder (argument 0), checked: given, short enough, printable ASCII. */
static const char *
HolderArgument(FunctionCallInfo fcinfo)
{
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
	return text_to_cstring(PG_GETARG_TEXT_PP(0));
}

/*
 * The ttl (argument 1) in ms, 0 if NULL: one conversion, kept with the
 * lease for every renewal.
 */
static int64
TtlArgument(FunctionCallInfo fcinfo)
{
	if (PG_ARGISNULL(1))
		return 0;

	Interval   *ttl = PG_GETARG_INTERVAL_P(1);
	int64		ttl_ms = snowflake::TtlMs(ttl->month, ttl->day, ttl->time);
	/* A month has no length in ms: say how to write the ttl instead. */
	bool		has_months = ttl->month != 0;

#ifdef INTERVAL_NOT_FINITE
	if (INTERVAL_NOT_FINITE(ttl))
		has_months = false;
#endif
	if (ttl_ms < 0)
		ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("a snowflake lease's ttl must lie between 1 second and 24 hours, "
					"not %s",
						DatumGetCString(
							DirectFunctionCall1(interval_out, IntervalPGetDatum(ttl)))),
			 has_months ? errdetail("A month has no fixed number of milliseconds.") : 0,
				 has_months ?
					 errhint("Write the ttl in hours or days, for example '12 hours'.") :
						  errhint("Pass NULL for a lease held as long as the connection.")));
	return ttl_ms;
}

/* The grant's arguments, checked, and whether this server grants such a lease. */
static GrantRequest
GrantArguments(FunctionCallInfo fcinfo)
{
	GrantRequest request{};

	request.holder = HolderArgument(fcinfo);
	request.ttl_ms = TtlArgument(fcinfo);

	/*
	 * Behind a pooler a server connection outlives its clients and serves
	 * many: a lease tied to it is no client's.  The operator can refuse
	 * them for the whole server.
	 */
	if (request.ttl_ms == 0 && !g_settings.allow_connection_leases)
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
	request.client_clock = ClientClockOf(fcinfo, 2);
	return request;
}

/*
 * The parts of a grant's image that do not depend on the worker id it
 * takes, filled in before the lock (the client address allocates memory).
 */
static void
PrepareGrantImage(const GrantRequest &request, const SharedState *state, LeaseImage *image)
{
	memset(image, 0, sizeof(*image));
	SetLeaseImageLayout(image);
	image->holder_role = GetUserId();
	if (request.ttl_ms == 0)
	{
		image->backend_pid = MyProcPid;
		image->backend_start = MyStartTimestamp;
		image->instance_id = state->instance_id;
	}
	image->ttl_ms = request.ttl_ms;
	image->window_ms = request.ttl_ms > 0 ? request.ttl_ms :
											g_settings.lease_connection_window_ms;
	image->last_timestamp_ms = kNoTimestamp;
	CopyClippedText(image->holder, sizeof(image->holder), request.holder);
	CopyClippedText(image->application_name, sizeof(image->application_name),
					application_name ? application_name : "");
	/* PostgreSQL's check hook made it ASCII already; the image's rule is kept here. */
	snowflake::CleanToPrintableAscii(image->application_name);
	ClientAddress(image->client_addr, sizeof(image->client_addr));
}

/* What the locked part of a grant decided. */
struct GrantOutcome
{
	snowflake::LeaseChoice choice;	/* kChosen: granted, unless the clock is off */
	int64		now_ms;			/* the database's clock, under the lock */
	int64		first_expiry_ms;	/* kAllHeld: the first time-scoped lease's end;
									 * INT64_MAX: none */
	snowflake::ClientClock clock;	/* against the worker id's previous holder */
	int64		previous_ms;	/* that holder's last timestamp, or kNoTimestamp */
	LeaseImage	image;			/* granted: the new lease */
	uint64		change;
	XLogRecPtr	lsn;
};

/* The end of the first time-scoped lease held; INT64_MAX if none.  Lock held. */
static int64
FirstExpiry(const LeaseTable *table, int64 now_ms)
{
	int64		first_expiry = INT64_MAX;

	for (uint32 i = 0; i < table->count; i++)
		if (LeaseIsHeld(table->entries[i], now_ms) && table->entries[i].image.ttl_ms > 0)
			first_expiry = Min(first_expiry, table->entries[i].image.not_after_ms);
	return first_expiry;
}

/*
 * Takes the table's lock, chooses a worker id, checks the client's clock
 * against its previous holder, commits the grant ("out->image", prepared
 * by PrepareGrantImage()) and releases the lock.  Raises no error with the
 * lock held (but the file's, see lease_table.hpp): a refusal is returned.
 * "histories" has room for every entry.
 */
static void
GrantUnderLock(LeaseTable *table, const GrantRequest &request, int64 floor_minus_1,
			   snowflake::LeaseHistory *histories, GrantOutcome *out)
{
	LockLeaseTableForChange(table);
	out->now_ms = NowUnixMs();
	for (uint32 i = 0; i < table->count; i++)
		histories[i] = HistoryOf(table->entries[i], out->now_ms);
	out->choice = snowflake::ChooseWorker(histories, table->count, out->now_ms,
										  floor_minus_1,
										  g_settings.lease_connection_window_ms);
	if (out->choice.outcome == snowflake::LeaseChoice::kAllHeld)
		out->first_expiry_ms = FirstExpiry(table, out->now_ms);
	if (out->choice.outcome != snowflake::LeaseChoice::kChosen)
	{
		LWLockRelease(table->lock);
		return;
	}

	const uint32 index = static_cast<uint32>(out->choice.index);

	out->previous_ms = histories[index].ever_leased ? histories[index].last_timestamp_ms :
													  kNoTimestamp;
	out->clock = JudgeClientClock(request.client_clock, out->now_ms, out->previous_ms);
	if (out->clock != snowflake::ClientClock::kOk)
	{
		LWLockRelease(table->lock);
		return;
	}

	LeaseImage &image = out->image;

	image.worker_id = table->first_worker_id + index;
	image.token = table->last_token + 1;
	image.granted_at = GetCurrentTimestamp();
	image.renewed_at = image.granted_at;
	image.not_before_ms = out->choice.not_before_ms;
	image.not_after_ms = snowflake::WindowEnd(out->now_ms, out->choice.not_before_ms,
											  image.window_ms);
	out->change = CommitLeaseImage(table, index, &image, request.ttl_ms == 0, &out->lsn);
	LWLockRelease(table->lock);
}

/* ERROR for a grant that GrantUnderLock() refused; returns if it granted. */
static void
ReportRefusedGrant(const GrantOutcome &out, const GrantRequest &request)
{
	if (out.choice.outcome == snowflake::LeaseChoice::kAllHeld)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("all %d snowflake worker ids set aside for leases are leased",
						g_settings.lease_workers),
				 out.first_expiry_ms == INT64_MAX ?
					 errdetail("Node %d sets aside %d worker ids "
							   "(snowflake.lease_workers). Every lease is held by a "
							   "connection.",
							   g_settings.node_id, g_settings.lease_workers) :
					 errdetail("Node %d sets aside %d worker ids "
							   "(snowflake.lease_workers). The first time-scoped lease "
							   "runs out at %s unless renewed.",
							   g_settings.node_id, g_settings.lease_workers,
							   FormatUnixMs(out.first_expiry_ms)),
				 errhint("Release leases that are no longer used, or raise "
						 "snowflake.lease_workers and restart the server.")));
	if (out.choice.outcome == snowflake::LeaseChoice::kAllWaitTooLong)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("no snowflake worker id can be leased before %s",
						FormatUnixMs(out.choice.not_before_ms + 1)),
				 errdetail("Every free worker id was held until then by holders that "
						   "vanished or were revoked."),
				 errhint("Lease again after that time, or raise snowflake.lease_workers "
						 "and restart the server.")));
	ReportClientClock(out.clock, request.client_clock, out.now_ms, out.previous_ms);
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

	const GrantRequest request = GrantArguments(fcinfo);

	CheckClientClock(request.client_clock);
	if (CopyOfRowGrant(table, fcinfo, row_context, request.holder, request.ttl_ms))
		PG_RETURN_DATUM(GrantResult(fcinfo, row_grant.image));

	const int64 floor_minus_1 = g_settings.layout.epoch_ms + FixGenerationFloor(state) - 1;
	snowflake::LeaseHistory *histories = static_cast<snowflake::LeaseHistory *>(
		palloc(sizeof(snowflake::LeaseHistory) * table->count));
	GrantOutcome out{};

	if (request.ttl_ms == 0)
		WatchConnectionLeases();
	PrepareGrantImage(request, state, &out.image);
	GrantUnderLock(table, request, floor_minus_1, histories, &out);
	ReportRefusedGrant(out, request);
	MakeLeaseChangeDurable(table, out.change, out.lsn);

	RememberRowGrant(fcinfo, row_context, request.holder, request.ttl_ms, out.image);
	PG_RETURN_DATUM(GrantResult(fcinfo, out.image));
}

/* A renewal's or a release's arguments. */
struct ChangeRequest
{
	const char *caller;
	int64		token;
	bool		has_last_id;
	int64		last_id;		/* the last ID the holder issued, if has_last_id */
	bool		superuser;		/* the caller is one (asked before the lock) */
};

static ChangeRequest
ChangeArguments(FunctionCallInfo fcinfo, const char *caller)
{
	ChangeRequest request{};

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s needs a lease token", caller)));
	request.caller = caller;
	request.token = PG_GETARG_INT64(0);
	request.has_last_id = !PG_ARGISNULL(1);
	if (request.has_last_id)
		request.last_id = PG_GETARG_INT64(1);
	request.superuser = superuser();
	return request;
}

/* Why the locked part of a renewal or a release changed nothing. */
enum class ChangeRefusal
{
	kNone,
	kNotHeld,					/* no lease with this token */
	kOtherRole,
	kOtherConnection,			/* connection-scoped, of another backend */
	kReleased,					/* the renewal's error; the release returns false */
	kBadLastId,					/* the reported ID is not the lease's */
};

/* What the locked part of a renewal or a release decided. */
struct ChangeOutcome
{
	ChangeRefusal refusal;
	snowflake::ReportedId last_id;	/* kBadLastId: what is wrong with it */
	int64		last_id_ms;		/* the reported ID's timestamp, or kNoTimestamp */
	uint32		index;			/* the lease's entry, unless kNotHeld */
	LeaseImage	image;			/* the lease (changed, if committed) */
	uint64		change;
	XLogRecPtr	lsn;
};

/*
 * Whether "token" names the lease "image" for this session.  A lease
 * carried from 1.4 keeps the token its database's table counted apart
 * from other databases' tables (lease_v14.cpp): only that database's
 * sessions name it, or another table's holder would renew it.
 */
static bool
NamesLease(const LeaseImage &image, int64 token)
{
	return image.magic == kLeaseImageMagic && image.token == token &&
		(!(image.flags & kLeaseImported) || image.v14_database == MyDatabaseId);
}

/*
 * Lock held exclusively: the lease the token names, and whether the caller
 * may change it, in this order: held, the role, the connection, released,
 * the reported ID.  Raises no error.
 */
static ChangeOutcome
DecideChange(const LeaseTable *table, const ChangeRequest &request)
{
	ChangeOutcome out{};

	out.last_id_ms = kNoTimestamp;
	while (out.index < table->count &&
		   !NamesLease(table->entries[out.index].image, request.token))
		out.index++;
	if (out.index == table->count)
	{
		out.refusal = ChangeRefusal::kNotHeld;
		return out;
	}

	const LeaseEntry &entry = table->entries[out.index];
	const bool	released = (entry.image.flags & kLeaseReleased) != 0;

	out.image = entry.image;
	if (entry.image.holder_role != GetUserId() && !request.superuser)
		out.refusal = ChangeRefusal::kOtherRole;
	else if (entry.image.ttl_ms == 0 && !released && !HeldByThisBackend(entry))
		out.refusal = ChangeRefusal::kOtherConnection;
	else if (released)
		out.refusal = ChangeRefusal::kReleased;
	else if (request.has_last_id)
	{
		out.last_id = snowflake::CheckReportedId(g_settings.layout, request.last_id,
												 static_cast<uint32>(entry.image.node_id),
												 entry.image.worker_id,
												 entry.image.not_before_ms,
												 entry.image.not_after_ms, &out.last_id_ms);
		if (out.last_id != snowflake::ReportedId::kOk)
			out.refusal = ChangeRefusal::kBadLastId;
	}
	return out;
}

/* ERROR for a reported ID that is not the lease's. */
static void
ReportBadLastId(snowflake::ReportedId verdict, int64 id, const LeaseImage &image)
{
	snowflake::IdParts parts = snowflake::Decompose(g_settings.layout, id);

	if (verdict == snowflake::ReportedId::kNegative)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("snowflake ID %lld is out of range", static_cast<long long>(id)),
				 errdetail("Snowflake IDs are never negative.")));
	if (verdict == snowflake::ReportedId::kOtherWorker)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("snowflake ID %lld was not issued under lease %lld",
						static_cast<long long>(id), static_cast<long long>(image.token)),
				 errdetail("It carries node id %u and worker id %u; the lease is worker "
						   "id %u of node %d.",
						   parts.node_id, parts.worker_id, image.worker_id,
						   image.node_id)));
	if (verdict == snowflake::ReportedId::kOutsideWindow)
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

/* ERROR for a renewal or a release that DecideChange() refused (but kReleased's). */
static void
ReportRefusedChange(const ChangeOutcome &out, const ChangeRequest &request)
{
	const long long token = static_cast<long long>(request.token);

	if (out.refusal == ChangeRefusal::kNotHeld)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("snowflake lease %lld is not held", token),
				 errdetail("Node %d holds no lease with this token: the lease expired or "
						   "its connection ended, and its worker id was leased again, the "
						   "server restarted with another layout or lease space, or the "
						   "token was never granted here.",
						   g_settings.node_id),
				 errhint("Stop issuing IDs under this lease, and lease a worker id "
						 "again.")));
	if (out.refusal == ChangeRefusal::kOtherRole)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("snowflake lease %lld belongs to another role", token)));
	if (out.refusal == ChangeRefusal::kOtherConnection)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("snowflake lease %lld belongs to another connection", token),
				 errdetail("A connection-scoped lease is held by the connection that "
						   "took it, and ends with it."),
				 errhint("Call %s on that connection. Behind a connection pooler, "
						 "take time-scoped leases (with a ttl) instead.",
						 request.caller)));
	if (out.refusal == ChangeRefusal::kBadLastId)
		ReportBadLastId(out.last_id, request.last_id, out.image);
}

/* Takes the lock, decides, renews the lease if the caller may, releases the lock. */
static ChangeOutcome
RenewUnderLock(LeaseTable *table, const ChangeRequest &request)
{
	LockLeaseTableForChange(table);

	ChangeOutcome out = DecideChange(table, request);

	if (out.refusal == ChangeRefusal::kNone)
	{
		LeaseImage &image = out.image;
		const int64 now_ms = NowUnixMs();

		image.renewed_at = GetCurrentTimestamp();
		image.not_after_ms = Max(image.not_after_ms, now_ms + image.window_ms);
		if (out.last_id_ms != kNoTimestamp)
			image.last_timestamp_ms = Max(image.last_timestamp_ms, out.last_id_ms);
		out.change = CommitLeaseImage(table, out.index, &image,
									  table->entries[out.index].connected, &out.lsn);
	}
	LWLockRelease(table->lock);
	return out;
}

static Datum
RenewResult(FunctionCallInfo fcinfo, const LeaseImage &image)
{
	const Datum not_after = TimestampTzGetDatum(UnixMsToTimestampTz(image.not_after_ms));
	TupleDesc	tupdesc;
	Datum		values[kRenewColumns];
	bool		nulls[kRenewColumns] = {false};
	int			i = 0;

	if (get_call_result_type(fcinfo, nullptr, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	values[i++] = not_after;
	nulls[i] = image.ttl_ms == 0; /* expires_at: only a time-scoped lease expires */
	values[i++] = not_after;
	values[i++] = TimestampTzGetDatum(image.renewed_at);
	Assert(i == kRenewColumns);
	return HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls));
}

extern "C" Datum
snowflake_renew_lease(PG_FUNCTION_ARGS)
{
	const char *caller = "snowflake_renew_lease()";

	RefuseOutsidePrimaryBackend(caller);
	RefuseInReadOnlyTransaction(caller);
	LeaseTable *table = RequireLeaseTable();
	const ChangeRequest request = ChangeArguments(fcinfo, caller);

	CheckClientClock(ClientClockOf(fcinfo, 2));

	const ChangeOutcome out = RenewUnderLock(table, request);

	if (out.refusal == ChangeRefusal::kReleased)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("snowflake lease %lld was released",
						static_cast<long long>(request.token)),
				 errhint("Lease a worker id again.")));
	ReportRefusedChange(out, request);
	/* Not waited for: a start after a crash settles renewals (lease_table.hpp). */
	PublishLeaseChange(out.lsn);
	PG_RETURN_DATUM(RenewResult(fcinfo, out.image));
}

/*
 * Takes the lock, decides, releases the lease if the caller may (revokes
 * it, for another role), releases the lock.
 */
static ChangeOutcome
ReleaseUnderLock(LeaseTable *table, const ChangeRequest &request)
{
	LockLeaseTableForChange(table);

	ChangeOutcome out = DecideChange(table, request);

	if (out.refusal == ChangeRefusal::kNone)
	{
		LeaseImage &image = out.image;

		if (out.last_id_ms != kNoTimestamp)
			image.last_timestamp_ms = Max(image.last_timestamp_ms, out.last_id_ms);
		/*
		 * Another role (a superuser) revokes the lease: it cannot know what
		 * the holder issued, so the next holder starts above the whole window.
		 */
		if (image.holder_role != GetUserId())
		{
			image.last_timestamp_ms = Max(image.last_timestamp_ms, image.not_after_ms - 1);
			image.flags |= kLeaseRevoked;
		}
		image.flags |= kLeaseReleased;
		image.released_at = GetCurrentTimestamp();
		out.change = CommitLeaseImage(table, out.index, &image, false, &out.lsn);
	}
	LWLockRelease(table->lock);
	return out;
}

extern "C" Datum
snowflake_release_lease(PG_FUNCTION_ARGS)
{
	const char *caller = "snowflake_release_lease()";

	RefuseOutsidePrimaryBackend(caller);
	RefuseInReadOnlyTransaction(caller);
	LeaseTable *table = RequireLeaseTable();
	const ChangeRequest request = ChangeArguments(fcinfo, caller);
	const ChangeOutcome out = ReleaseUnderLock(table, request);

	if (out.refusal == ChangeRefusal::kReleased)
		PG_RETURN_BOOL(false);
	ReportRefusedChange(out, request);
	/*
	 * A release lost in a crash only keeps the worker id taken until its
	 * window ends; a revocation must hold, so it is waited for.
	 */
	if (out.image.flags & kLeaseRevoked)
		MakeLeaseChangeDurable(table, out.change, out.lsn);
	else
		PublishLeaseChange(out.lsn);
	PG_RETURN_BOOL(true);
}
