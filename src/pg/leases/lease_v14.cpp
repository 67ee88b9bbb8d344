/*
 * lease_v14.cpp
 *	  Version 1.4's afterlife: what the library does about 1.4's leases.
 *
 * Version 1.4 kept leases in a table of each database,
 * snowflake_worker_leases, changed through SECURITY DEFINER PL/pgSQL
 * functions that called the C function snowflake_lease_context(); from 1.5
 * on the library keeps them in the server (lease_table.hpp).
 *	- snowflake_lease_import_v14(): the 1.4 to 1.5 update script calls it
 *	  (as a superuser) for each row of the old table, then drops it;
 *	- snowflake_lease_context(): refuses, in a database still at 1.4 (its
 *	  SECURITY DEFINER callers are refused before that, old_versions.cpp).
 */
extern "C"
{
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"			/* GetAttributeByName */
#include "miscadmin.h"			/* superuser */
#include "utils/acl.h"			/* get_role_oid */
#include "utils/builtins.h"		/* TextDatumGetCString */
#include "utils/fmgrprotos.h"	/* inet_out */
#include "utils/inet.h"
#include "utils/timestamp.h"
}

#include <cstdio>

#include "core/holder_text.hpp"
#include "pg/leases/lease_functions.hpp"
#include "pg/leases/lease_table.hpp"
#include "pg/old_versions.hpp"
#include "pg/settings.hpp"

extern "C"
{
PG_FUNCTION_INFO_V1(snowflake_lease_import_v14);
PG_FUNCTION_INFO_V1(snowflake_lease_context);
}

/*
 * A column of a version 1.4 lease row that 1.4's table declares NOT NULL.
 * A NULL there (a table changed by hand) is refused: read as 0 it would
 * carry a lease with a window of nothing.
 */
static Datum
RequiredField(HeapTupleHeader row, const char *name)
{
	bool		isnull;
	Datum		value = GetAttributeByName(row, name, &isnull);

	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("column \"%s\" of a snowflake 1.4 lease is null", name),
				 errdetail("Version 1.4's table snowflake_worker_leases declares it NOT "
						   "NULL, so the row cannot be carried into version 1.5."),
				 errhint("Correct or delete the row of snowflake_worker_leases, then "
						 "update again.")));
	return value;
}

/* A column of a version 1.4 lease row that may be NULL; "isnull" set. */
static Datum
OptionalField(HeapTupleHeader row, const char *name, bool *isnull)
{
	return GetAttributeByName(row, name, isnull);
}

/* Whether a 1.4 row is this node's, of the running layout and lease space. */
static bool
IsThisServersLease(HeapTupleHeader row, const LeaseTable *table, int32 worker_id)
{
	const snowflake::Layout &layout = g_settings.layout;
	int32		node_id = DatumGetInt32(RequiredField(row, "node_id"));
	char		layout_text[96];

	snprintf(layout_text, sizeof(layout_text), INT64_FORMAT "/%d/%d/%d", layout.epoch_ms,
			 layout.node_bits, layout.worker_bits, layout.sequence_bits);

	char	   *row_layout = TextDatumGetCString(RequiredField(row, "layout"));

	return node_id == g_settings.node_id &&
		worker_id >= static_cast<int32>(table->first_worker_id) &&
		worker_id < static_cast<int32>(table->first_worker_id + table->count) &&
		strcmp(row_layout, layout_text) == 0;
}

/* The connection and the text of a 1.4 row, as printable ASCII. */
static void
ReadHolder(HeapTupleHeader row, LeaseImage *image)
{
	bool		isnull;
	Datum		value;

	image->holder_role =
		get_role_oid(NameStr(*DatumGetName(RequiredField(row, "holder_role"))), true);
	CopyClippedText(image->holder, sizeof(image->holder),
					TextDatumGetCString(RequiredField(row, "holder")));
	value = OptionalField(row, "application_name", &isnull);
	if (!isnull)
		CopyClippedText(image->application_name, sizeof(image->application_name),
						TextDatumGetCString(value));
	/* 1.4 took any holder, in the database's encoding: kept as every database can show it. */
	snowflake::CleanToPrintableAscii(image->holder);
	snowflake::CleanToPrintableAscii(image->application_name);
	value = OptionalField(row, "client_addr", &isnull);
	if (!isnull)
		CopyClippedText(image->client_addr, sizeof(image->client_addr),
						DatumGetCString(DirectFunctionCall1(inet_out, value)));
	value = OptionalField(row, "backend_pid", &isnull);
	image->backend_pid = isnull ? 0 : DatumGetInt32(value);
	value = OptionalField(row, "backend_start", &isnull);
	image->backend_start = isnull ? 0 : DatumGetTimestampTz(value);
	/* Its token was counted apart from other databases' tables: renewed only from here. */
	image->v14_database = MyDatabaseId;
}

/* The window and history of a 1.4 row. */
static void
ReadWindow(HeapTupleHeader row, LeaseImage *image)
{
	bool		isnull;
	Datum		value;

	image->window_ms = DatumGetInt64(RequiredField(row, "window_ms"));
	(void) OptionalField(row, "ttl", &isnull);
	image->ttl_ms = isnull ? 0 : image->window_ms;
	image->granted_at = DatumGetTimestampTz(RequiredField(row, "granted_at"));
	image->renewed_at = DatumGetTimestampTz(RequiredField(row, "renewed_at"));
	image->not_before_ms = DatumGetInt64(RequiredField(row, "not_before_ms"));
	image->not_after_ms = DatumGetInt64(RequiredField(row, "not_after_ms"));
	value = OptionalField(row, "last_timestamp_ms", &isnull);
	image->last_timestamp_ms = isnull ? snowflake::kNoTimestamp : DatumGetInt64(value);
	value = OptionalField(row, "released_at", &isnull);
	if (!isnull)
	{
		image->released_at = DatumGetTimestampTz(value);
		image->flags |= kLeaseReleased;
	}
}

/*
 * Refuses a 1.4 row whose window 1.4 could not have written (a table
 * changed by hand): a window outside 1.4's bounds, or timestamps outside
 * the layout's range, would wrap where the windows of the worker id's
 * next holders are computed and shown.
 */
static void
RefuseWindowOutOfRange(const LeaseImage &image)
{
	const int64 layout_end = g_settings.layout.LastUnixMs() + 1;
	const bool	last_ok = image.last_timestamp_ms == snowflake::kNoTimestamp ||
		(image.last_timestamp_ms >= 0 && image.last_timestamp_ms <= layout_end);

	if (image.window_ms >= snowflake::kMinLeaseTtlMs &&
		image.window_ms <= kMaxLeaseWindowMs && image.not_before_ms >= 0 &&
		image.not_before_ms < image.not_after_ms && image.not_after_ms <= layout_end &&
		last_ok)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_CHECK_VIOLATION),
			 errmsg("the window of snowflake 1.4 lease %lld is out of range",
					static_cast<long long>(image.token)),
			 errdetail("Version 1.4 wrote windows of 1 s to 24 h, from not_before_ms to a "
					   "later not_after_ms, within the layout's timestamps."),
			 errhint("Correct or delete the row of snowflake_worker_leases, then "
					 "update again.")));
}

/* What the locked part of an import decided. */
enum class ImportOutcome
{
	kImported,
	kKept,						/* the table's lease of the worker id stays */
	kAfterGrants,				/* version 1.5 granted from the table already */
	kTwoHolders,				/* the table's lease of the worker id is held too */
	kTokenClash,				/* another worker id's lease has the same token */
};

/* What the locked part of an import found, for the report. */
struct ImportResult
{
	ImportOutcome outcome;
	uint32		clash_worker_id;	/* kTokenClash: the other lease's worker id */
	uint64		change;
	XLogRecPtr	lsn;
};

/*
 * Everything a lease's holder may have issued IDs up to: the not_before
 * its worker id's next holder needs (lease_rules.hpp).
 */
static int64
IssuedUpTo(const LeaseImage &image)
{
	snowflake::LeaseHistory history{};

	history.ever_leased = true;
	history.released = (image.flags & kLeaseReleased) != 0;
	history.not_before_ms = image.not_before_ms;
	history.not_after_ms = image.not_after_ms;
	history.last_timestamp_ms = image.last_timestamp_ms;
	return snowflake::NextNotBefore(history, snowflake::kNoTimestamp);
}

/*
 * What a lease's history keeps covered once its holder releases it: a
 * release drops the not_after - 1 that IssuedUpTo() counts while it is
 * not released.  A kept lease must cover the other row for good.
 */
static int64
CoveredAfterRelease(const LeaseImage &image)
{
	LeaseImage	released = image;

	released.flags |= kLeaseReleased;
	return IssuedUpTo(released);
}

/*
 * Lock held: which of two 1.4 leases of one worker id the table keeps.
 * Two exist only when two databases' 1.4 tables leased from this server
 * (snowflake.database moved under 1.4), whose tokens were counted apart,
 * so their order says nothing.  A held lease is kept: its holder renews
 * it; of two not held, the later token.  Either way the kept one's
 * last_timestamp_ms is raised to cover what the other's holder may have
 * issued, so the worker id's next holder starts above both.
 */
static ImportOutcome
MergeWithTable(const LeaseEntry &entry, int64 now_ms, LeaseImage *image)
{
	LeaseEntry	incoming{};

	incoming.image = *image;	/* imported: connected stays false */
	incoming.image.magic = kLeaseImageMagic;	/* as it will be committed */
	const bool	table_held = LeaseIsHeld(entry, now_ms);
	const bool	row_held = LeaseIsHeld(incoming, now_ms);

	if (table_held && row_held && entry.image.token != image->token)
	{
		/* Its holder may issue IDs until told: the kept lease covers them. */
		const int64 row_issued = IssuedUpTo(*image);

		if (row_issued > CoveredAfterRelease(entry.image))
		{
			*image = entry.image;
			image->last_timestamp_ms = row_issued;
		}
		return ImportOutcome::kTwoHolders;
	}
	if (table_held || (!row_held && entry.image.token >= image->token))
	{
		const int64 row_issued = IssuedUpTo(*image);

		if (row_issued <= CoveredAfterRelease(entry.image))
			return ImportOutcome::kKept;
		/* The table's lease stays, raised past the row's (shown as its last report). */
		*image = entry.image;
		image->last_timestamp_ms = row_issued;
		return ImportOutcome::kImported;
	}
	if (IssuedUpTo(entry.image) > CoveredAfterRelease(*image))
		image->last_timestamp_ms = IssuedUpTo(entry.image);
	return ImportOutcome::kImported;
}

/*
 * Lock held, version 1.5 granted already: the row is not carried (its token
 * and window would clash with 1.5's), but its holder may issue IDs until it
 * is told, up to its not_after: the worker id's next holder starts above
 * that.  A worker id never leased gets an ended lease under a token no one
 * holds.  Returns the change committed, 0 if none was needed.
 */
static uint64
CoverAfterGrants(LeaseTable *table, uint32 index, const LeaseImage &row, XLogRecPtr *lsn)
{
	const LeaseEntry &entry = table->entries[index];
	const int64 row_issued = IssuedUpTo(row);
	LeaseImage	cover;

	if (entry.image.magic == kLeaseImageMagic && entry.image.token != 0)
	{
		/* Carried by an earlier attempt of this update: its own window covers it. */
		if (entry.image.token == row.token && entry.image.granted_at == row.granted_at &&
			entry.image.holder_role == row.holder_role)
			return 0;
		if (row_issued <= CoveredAfterRelease(entry.image))
			return 0;
		cover = entry.image;
	}
	else
	{
		cover = row;
		cover.token = table->last_token + 1;
		cover.flags |= kLeaseReleased;
		cover.released_at = GetCurrentTimestamp();
	}
	cover.last_timestamp_ms = row_issued;
	return CommitLeaseImage(table, index, &cover, entry.connected, lsn);
}

/*
 * Takes the table's lock, commits the row's lease "image" into the entry
 * at "index" (merged with the lease the entry holds, if any) if it may,
 * releases the lock.  Only into a lease table that version 1.5 has not
 * granted from yet: its tokens and windows would clash with the old
 * table's (after grants, only the row's window is covered).  Never two
 * leases with one token: a renewal names its lease by the token alone.
 */
static ImportResult
ImportUnderLock(LeaseTable *table, uint32 index, LeaseImage *image)
{
	ImportResult result{ImportOutcome::kImported, 0, 0, InvalidXLogRecPtr};
	const int64 now_ms = NowUnixMs();
	const LeaseImage row = *image;

	LockLeaseTableForChange(table);
	/*
	 * Whatever is carried, the row's holder renews with its token: it must
	 * name no other lease (another worker id's, or another grant of this
	 * one).  A released row's holder renews no more.
	 */
	for (uint32 i = 0; i < table->count && !(row.flags & kLeaseReleased); i++)
	{
		const LeaseImage &other = table->entries[i].image;

		if (other.magic == kLeaseImageMagic && other.token == row.token &&
			!(i == index && other.granted_at == row.granted_at &&
			  other.holder_role == row.holder_role))
		{
			result.outcome = ImportOutcome::kTokenClash;
			result.clash_worker_id = other.worker_id;
			LWLockRelease(table->lock);
			return result;
		}
	}
	for (uint32 i = 0; i < table->count; i++)
	{
		const LeaseImage &current = table->entries[i].image;

		if (current.magic == kLeaseImageMagic && !(current.flags & kLeaseImported))
			result.outcome = ImportOutcome::kAfterGrants;
	}
	if (result.outcome == ImportOutcome::kAfterGrants)
		result.change = CoverAfterGrants(table, index, *image, &result.lsn);
	if (result.outcome == ImportOutcome::kImported &&
		table->entries[index].image.magic == kLeaseImageMagic &&
		table->entries[index].image.token != 0)
		result.outcome = MergeWithTable(table->entries[index], now_ms, image);
	if (result.outcome == ImportOutcome::kTwoHolders && image->token != row.token)
		result.change = CommitLeaseImage(table, index, image, false, &result.lsn);
	for (uint32 i = 0; i < table->count && result.outcome == ImportOutcome::kImported; i++)
	{
		const LeaseImage &other = table->entries[i].image;

		if (i != index && other.magic == kLeaseImageMagic && other.token == image->token)
		{
			result.outcome = ImportOutcome::kTokenClash;
			result.clash_worker_id = other.worker_id;
		}
	}
	if (result.outcome == ImportOutcome::kImported)
		result.change = CommitLeaseImage(table, index, image, false, &result.lsn);
	LWLockRelease(table->lock);
	return result;
}

/* The WARNING or ERROR for a row the import did not carry. */
static void
ReportNotCarried(const ImportResult &result, const LeaseImage &image)
{
	const long long token = static_cast<long long>(image.token);
	const int worker_id = static_cast<int>(image.worker_id);

	if (result.outcome == ImportOutcome::kAfterGrants)
		ereport(WARNING,
				(errmsg("snowflake lease %lld of worker id %d, taken under version 1.4, "
						"was not carried into version 1.5",
						token, worker_id),
				 errdetail("This server leased worker ids under version 1.5 before this "
						   "database was updated."),
				 errhint("Update first the database whose 1.4 table "
						 "snowflake_worker_leases held the leases (where "
						 "snowflake.database pointed under 1.4).  The lease's holder is "
						 "told at its next renewal.")));
	else if (result.outcome == ImportOutcome::kTwoHolders)
		ereport(WARNING,
				(errmsg("snowflake lease %lld of worker id %d, taken under version 1.4, "
						"was not carried into version 1.5",
						token, worker_id),
				 errdetail("A lease of worker id %d carried from another database is held "
						   "too: version 1.4 leased it from two databases' tables.",
						   worker_id),
				 errhint("The lease's holder is told at its next renewal.")));
	else if (result.outcome == ImportOutcome::kTokenClash)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("snowflake lease %lld of worker id %d, taken under version 1.4, "
						"has the token of worker id %d's lease, carried from another "
						"database",
						token, worker_id, static_cast<int>(result.clash_worker_id)),
				 errdetail("Version 1.4 counted the tokens of each database's table apart, "
						   "and a renewal names its lease by the token alone."),
				 errhint(
					 "Update first the database whose 1.4 table "
					 "snowflake_worker_leases held the leases (where "
					 "snowflake.database pointed under 1.4).  In the others, delete the "
					 "rows of leases no longer held from snowflake_worker_leases, then "
					 "update.")));
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
	LeaseImage	image;

	memset(&image, 0, sizeof(image));
	image.worker_id = static_cast<uint32>(DatumGetInt32(RequiredField(row, "worker_id")));
	image.token = DatumGetInt64(RequiredField(row, "token"));
	if (image.token <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("token %lld of a snowflake 1.4 lease is not positive",
						static_cast<long long>(image.token)),
				 errdetail("Version 1.4 numbered its leases from 1; a lease with token 0 "
						   "would be read as never granted."),
				 errhint("Correct or delete the row of snowflake_worker_leases, then "
						 "update again.")));
	/* 1.4 counted from 1 in each table: far below this, and a grant's token + 1 cannot wrap. */
	if (image.token > (int64{1} << 53))
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("token %lld of a snowflake 1.4 lease is out of range",
						static_cast<long long>(image.token)),
				 errdetail("Version 1.4 numbered the leases of each table from 1."),
				 errhint("Correct or delete the row of snowflake_worker_leases, then "
						 "update again.")));
	if (!IsThisServersLease(row, table, static_cast<int32>(image.worker_id)))
		PG_RETURN_BOOL(false);
	SetLeaseImageLayout(&image);
	ReadHolder(row, &image);
	ReadWindow(row, &image);
	RefuseWindowOutOfRange(image);
	image.flags |= kLeaseImported;

	const LeaseImage row_image = image;
	ImportResult result = ImportUnderLock(table, image.worker_id - table->first_worker_id,
										  &image);

	if (result.change != 0)
		MakeLeaseChangeDurable(table, result.change, result.lsn);
	ReportNotCarried(result, row_image);
	if (result.outcome != ImportOutcome::kImported)
		PG_RETURN_BOOL(false);
	PG_RETURN_BOOL(true);
}

/*
 * snowflake_lease_context(): the C entry point of version 1.4's SQL lease
 * functions, kept so that they refuse clearly.  A database still at 1.4
 * must not lease from its table: two sources would hand out one worker id
 * twice.  The symbol must stay: the 1.3 to 1.4 update script, part of
 * every update from before 1.4, creates the function, and a C function
 * needs its symbol.
 */
extern "C" Datum
snowflake_lease_context(PG_FUNCTION_ARGS)
{
	(void) fcinfo;
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("snowflake extension version 1.4 cannot lease worker ids under library "
					"version %s",
					LibraryVersion()),
			 errdetail("Since version 1.5 leases are kept in the server, not in the table "
					   "snowflake_worker_leases."),
			 errhint(
				 "Run ALTER EXTENSION snowflake UPDATE, first in the database whose 1.4 "
				 "table snowflake_worker_leases holds the leases (where "
				 "snowflake.database pointed under 1.4): it carries them over.")));
	PG_RETURN_NULL();
}
