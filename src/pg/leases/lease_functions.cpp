/*
 * lease_functions.cpp
 *	  snowflake_lease_worker(), snowflake_renew_lease() and
 *	  snowflake_release_lease(), each of the shape README.md describes, so
 *	  that no error is raised with the table's lock held (lease_table.hpp).
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
#include "utils/builtins.h"		/* text_to_cstring */
#include "utils/guc.h"			/* application_name */
#include "utils/inet.h"
#include "utils/timestamp.h"
#include "utils/fmgrprotos.h"	/* inet_client_addr, inet_out */
}

#include "core/holder_text.hpp"
#include "core/lease_rules.hpp"
#include "pg/clock.hpp"
#include "pg/clock_watch.hpp"
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

/* The columns of each function's result, as snowflake--1.6.sql declares them. */
static constexpr int kGrantColumns = 13;
static constexpr int kRenewColumns = 3;

/* A copy: timestamptz_to_str()'s static buffer is overwritten by its next call. */
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
 * for its own connection, which ends with the query.  Then a read-only
 * transaction is refused as nextval() is (25006); a standby's keeps the
 * message that says to call on the primary.
 */
static void
RefuseUnlessLeasesCanChange(const char *caller)
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
	PreventCommandIfReadOnly(caller);
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
 * The core's verdict on the client's clock against "now_ms" and, unless
 * kNoTimestamp, "previous_ms", the previous holder's last timestamp.  Raises
 * no error: callable under the table's lock.
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

	const bool behind = verdict == snowflake::ClientClock::kBehind;

	if (behind || verdict == snowflake::ClientClock::kAhead)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the client's clock is %s the database's by more than %lld ms",
						behind ? "behind" : "ahead of", tolerance),
				 errdetail("The client reported %s, %s the database's clock, %s.",
						   FormatTimestamp(client_clock.time), behind ? "before" : "after",
						   FormatUnixMs(now_ms)),
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
	const int64 now_ms = TrustedNowUnixMs();

	ReportClientClock(JudgeClientClock(client_clock, now_ms, kNoTimestamp), client_clock,
					  now_ms, kNoTimestamp);
}

/* Copies "text" into "out" ("size" bytes), cut at a character boundary. */
static void
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

/* The row of "values" and "nulls", of the function's declared row type. */
static Datum
FormResultRow(FunctionCallInfo fcinfo, Datum *values, bool *nulls)
{
	TupleDesc tupdesc;

	if (get_call_result_type(fcinfo, nullptr, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	return HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls));
}

static Datum
GrantResult(FunctionCallInfo fcinfo, const LeaseImage &image)
{
	const snowflake::Layout &layout = g_settings.layout;
	const Datum not_after = TimestampTzGetDatum(UnixMsToTimestampTz(image.not_after_ms));
	Datum		values[kGrantColumns];
	bool		nulls[kGrantColumns] = {false};
	int			i = 0;

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
	return FormResultRow(fcinfo, values, nulls);
}

/* A grant's arguments, checked. */
struct GrantRequest
{
	const char *holder;
	int64		ttl_ms;			/* 0: connection-scoped */
	ClientClockArgument client_clock;
};

/*
 * The holder (argument 0), checked: given, short enough, printable ASCII
 * (core/holder_text.hpp), as every database of the server shows it.
 * 22021, not 22023 as for its length: a well-formed string with a
 * character outside the holder's repertoire.
 */
static const char *
HolderArgument(FunctionCallInfo fcinfo)
{
	const text *holder = PG_ARGISNULL(0) ? nullptr : PG_GETARG_TEXT_PP(0);
	const size_t length = holder != nullptr ? VARSIZE_ANY_EXHDR(holder) : 0;

	if (length == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("snowflake_lease_worker() needs a holder"),
				 errhint("Describe the instance that leases, such as its host, process id "
						 "and name.")));
	if (length > kMaxHolderBytes)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a snowflake lease's holder must be at most %d bytes long, not %zu",
						kMaxHolderBytes, length),
				 errhint("Describe the instance that leases briefly, such as its host, "
						 "process id and name.")));

	const char *bytes = VARDATA_ANY(holder);
	const size_t bad = snowflake::FirstNonPrintableAscii(bytes, length);
	const unsigned int byte = bad < length ? static_cast<unsigned char>(bytes[bad]) : 0;

	if (bad != length)
		ereport(ERROR,
				(errcode(ERRCODE_CHARACTER_NOT_IN_REPERTOIRE),
				 errmsg("a snowflake lease's holder must be printable ASCII"),
				 errdetail("Byte %zu of the holder is 0x%02X, outside printable ASCII "
						   "(0x20 to 0x7E).",
						   bad + 1, byte),
				 errhint("Every database of the server shows the holder, whatever its "
						 "encoding: describe the instance with letters, digits, spaces and "
						 "punctuation.")));
	return text_to_cstring(holder);
}

/* The ttl (argument 1) in ms, 0 if NULL: converted once, kept for every renewal. */
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

	/* Behind a pooler a server connection outlives its clients: the operator's choice. */
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

/* A grant's image but its worker id's part, before the lock (inet_out allocates). */
static void
PrepareGrantImage(const GrantRequest &request, const SharedState *state, LeaseImage *image)
{
	const snowflake::Layout &layout = g_settings.layout;

	memset(image, 0, sizeof(*image));
	image->node_id = g_settings.node_id;
	image->layout_epoch_ms = layout.epoch_ms;
	image->layout_node_bits = static_cast<int16>(layout.node_bits);
	image->layout_worker_bits = static_cast<int16>(layout.worker_bits);
	image->layout_sequence_bits = static_cast<int16>(layout.sequence_bits);
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

/*
 * Takes the lock, chooses a worker id, checks the client's clock against
 * its previous holder, commits the grant prepared in "out->image", releases
 * the lock; a refusal is returned.  "histories" has room for every entry.
 */
static void
GrantUnderLock(LeaseTable *table, const GrantRequest &request, int64 floor_minus_1,
			   snowflake::LeaseHistory *histories, GrantOutcome *out)
{
	LockLeaseTableForChange(table);
	out->now_ms = TrustedNowUnixMs();
	out->first_expiry_ms = INT64_MAX;
	for (uint32 i = 0; i < table->count; i++)
	{
		histories[i] = LeaseHistoryOf(table->entries[i], out->now_ms);
		if (histories[i].held && table->entries[i].image.ttl_ms > 0)
			out->first_expiry_ms = Min(out->first_expiry_ms, histories[i].not_after_ms);
	}
	out->choice = snowflake::ChooseWorker(histories, table->count, out->now_ms,
										  floor_minus_1,
										  g_settings.lease_connection_window_ms);
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
				 errdetail("Node %d sets aside %d worker ids (snowflake.lease_workers). %s",
						   g_settings.node_id, g_settings.lease_workers,
						   out.first_expiry_ms == INT64_MAX ?
							   "Every lease is held by a connection." :
							   psprintf("The first time-scoped lease runs out at %s unless "
										"renewed.",
										FormatUnixMs(out.first_expiry_ms))),
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

/*
 * A not_before beyond a connection window ahead of the clock comes from the
 * generation floor (ChooseWorker skips an id whose history alone pushes it
 * further): a poisoned future the holder must be told of.
 */
static void
WarnIfNotBeforeAhead(const GrantOutcome &out)
{
	const int64 ahead_ms = out.image.not_before_ms - out.now_ms;

	if (ahead_ms <= g_settings.lease_connection_window_ms)
		return;
	ereport(
		WARNING,
		(errcode(ERRCODE_WARNING),
		 errmsg("the lease's not_before lies " INT64_FORMAT " ms ahead of the clock",
				ahead_ms),
		 errdetail("This node's generation floor lies ahead of its clock (a clock step "
				   "accepted and then corrected, or one made while the server was down): "
				   "a generator that waits for its clock to pass not_before, %s, issues "
				   "no ID with this lease until then.",
				   FormatUnixMs(out.image.not_before_ms)),
		 errhint("Issue the lease's IDs above not_before at once, their timestamps "
				 "advancing with the IDs, as snowflake.on_clock_behind = 'ride' does "
				 "for sessions; they stay unique.  Or wait until the clock reaches "
				 "not_before.")));
}

extern "C" Datum
snowflake_lease_worker(PG_FUNCTION_ARGS)
{
	RefuseUnlessLeasesCanChange("snowflake_lease_worker()");
	SharedState *state = RequireSharedState();
	LeaseTable *table = RequireLeaseTable();

	RequestRegistryOnceIfMissing();

	const GrantRequest request = GrantArguments(fcinfo);

	CheckClientClock(request.client_clock);

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
	WarnIfNotBeforeAhead(out);
	PG_RETURN_DATUM(GrantResult(fcinfo, out.image));
}

/* A renewal's or a release's arguments, and the table. */
struct ChangeRequest
{
	LeaseTable *table;
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

	RefuseUnlessLeasesCanChange(caller);
	request.table = RequireLeaseTable();
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

/* Whether "token" names "image" of this node: another node id's is history only. */
static bool
NamesLease(const LeaseImage &image, int64 token)
{
	return image.magic == kLeaseImageMagic && image.token == token &&
		image.node_id == g_settings.node_id;
}

/*
 * Lock held: the lease the token names, and whether the caller may change
 * it (held, role, connection, released, reported ID, in this order).
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

/*
 * Takes the lock, decides, renews or releases the lease if the caller may
 * (a release by another role revokes it), releases the lock.
 */
static ChangeOutcome
ChangeUnderLock(const ChangeRequest &request, bool renew)
{
	LeaseTable *table = request.table;

	LockLeaseTableForChange(table);

	ChangeOutcome out = DecideChange(table, request);
	LeaseImage &image = out.image;

	if (out.refusal == ChangeRefusal::kNone)
	{
		if (out.last_id_ms != kNoTimestamp)
			image.last_timestamp_ms = Max(image.last_timestamp_ms, out.last_id_ms);
		if (renew)
		{
			image.renewed_at = GetCurrentTimestamp();
			image.not_after_ms = Max(image.not_after_ms,
									 TrustedNowUnixMs() + image.window_ms);
		}
		else
		{
			/* A revoker cannot know what the holder issued: the next starts above it all. */
			if (image.holder_role != GetUserId())
			{
				image.last_timestamp_ms = Max(image.last_timestamp_ms,
											  image.not_after_ms - 1);
				image.flags |= kLeaseRevoked;
			}
			image.flags |= kLeaseReleased;
			image.released_at = GetCurrentTimestamp();
		}
		out.change = CommitLeaseImage(table, out.index, &image,
									  renew && table->entries[out.index].connected,
									  &out.lsn);
	}
	LWLockRelease(table->lock);
	return out;
}

static Datum
RenewResult(FunctionCallInfo fcinfo, const LeaseImage &image)
{
	const Datum not_after = TimestampTzGetDatum(UnixMsToTimestampTz(image.not_after_ms));
	Datum		values[kRenewColumns];
	bool		nulls[kRenewColumns] = {false};
	int			i = 0;

	values[i++] = not_after;
	nulls[i] = image.ttl_ms == 0; /* expires_at: only a time-scoped lease expires */
	values[i++] = not_after;
	values[i++] = TimestampTzGetDatum(image.renewed_at);
	Assert(i == kRenewColumns);
	return FormResultRow(fcinfo, values, nulls);
}

extern "C" Datum
snowflake_renew_lease(PG_FUNCTION_ARGS)
{
	const ChangeRequest request = ChangeArguments(fcinfo, "snowflake_renew_lease()");

	CheckClientClock(ClientClockOf(fcinfo, 2));

	const ChangeOutcome out = ChangeUnderLock(request, true);

	if (out.refusal == ChangeRefusal::kReleased)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("snowflake lease %lld was released",
						static_cast<long long>(request.token)),
				 errhint("Lease a worker id again.")));
	ReportRefusedChange(out, request);
	/* Not waited for: a start after a crash settles renewals (lease_table.hpp). */
	XLogSetAsyncXactLSN(out.lsn);
	PG_RETURN_DATUM(RenewResult(fcinfo, out.image));
}

extern "C" Datum
snowflake_release_lease(PG_FUNCTION_ARGS)
{
	const ChangeRequest request = ChangeArguments(fcinfo, "snowflake_release_lease()");
	const ChangeOutcome out = ChangeUnderLock(request, false);

	if (out.refusal == ChangeRefusal::kReleased)
		PG_RETURN_BOOL(false);
	ReportRefusedChange(out, request);
	/*
	 * A release lost in a crash only keeps the worker id taken until its
	 * window ends; a revocation must hold, so it is waited for.
	 */
	if (out.image.flags & kLeaseRevoked)
		MakeLeaseChangeDurable(request.table, out.change, out.lsn);
	else
		XLogSetAsyncXactLSN(out.lsn);
	PG_RETURN_BOOL(true);
}
