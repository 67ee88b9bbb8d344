/*
 * lease_table.hpp
 *	  The worker-id leases of this server: one entry per worker id of the
 *	  lease space, in shared memory, kept the way the reservation is kept.
 *
 * Every change of an entry is a complete image, numbered, written into its
 * block of $PGDATA/snowflake.lease_state and WAL-logged (README.md).
 * Replay applies an image only if its change number is newer than the
 * entry's: the file and the WAL may each be ahead of the other.
 *
 * A renewal or a release by its holder is written and logged, not waited
 * for.  A crash of PostgreSQL alone (a killed backend, a crash restart,
 * kill -9 of the postmaster) cannot lose it: the page cache outlives the
 * processes, and every image is written before it is logged.  A crash of
 * the machine, a promotion (records not received) or a copy of the data
 * directory (a backup, a snapshot, pg_basebackup) can.  For those, the
 * first change of the run "settles" the table: every lease not released is taken to have
 * been renewed then (not_after = now + its window), which covers what a
 * lost renewal promised; a lost release only keeps a worker id taken a
 * little longer.  The header (block 0; worker id 0 is always a session's)
 * records whether the last shutdown was clean, and the node id and the
 * kernel's boot id of the last start.  A start settles if
 *	- the last shutdown was not clean and the boot id differs (a restart of
 *	  the machine, or a file from another one) or cannot be read;
 *	- standby.signal, recovery.signal or backup_label is present (a standby
 *	  settles once promoted);
 *	- the header says a settle is pending: written at a start that needs
 *	  one, cleared by the settle, so a crash in between settles again;
 *	- redo applied an image newer than the file's (the file lost a write).
 * Not caught: a snapshot restored on the same machine in the same boot
 * without a backup_label looks like a crash restart; docs/leases.md says to
 * restore it as a backup.  pg_upgrade needs a clean stop of the old
 * cluster, whose file the operator copies (data_directory.cpp): nothing to
 * settle.  A lease that expired before a crash that needs no settle stays
 * expired.
 *
 * Tokens: a grant's token is one above the largest the server knows, from
 * the blocks, the header (a lower bound written at each grant, settle and
 * clean shutdown) and the replayed records.  The first change of each run
 * raises the largest to at least that Unix millisecond times kTokensPerMs,
 * above every token of a promoted asynchronous standby's missed grants or
 * of those a restored copy lacks, unless the old server granted more than
 * kTokensPerMs a millisecond since its own last start, or the new clock is
 * behind the old by more than the time between the two starts.  The
 * timeline would not do: two standbys promoted one after the other without
 * a shared archive pick the same one, and a restored backup keeps it.
 *
 * A damaged file stops the start (FATAL): a block with a wrong checksum, of
 * another worker id, of zeros or not an image, a header not valid, an
 * empty file outside a new data directory.  Every block is written (as an
 * "empty" image with a CRC) when the file is created or grows.
 *
 * A worker id's block holds its last lease whatever the node id: a lease
 * of an earlier node id is kept, not renewed, and bounds the next window,
 * so a node id changed and changed back never leases over a live window.
 *
 * Locking: one LWLock guards the entries, held for a few microseconds per
 * change (copy, write into the page cache, WAL insert); the fsync and the
 * wait for standbys come after its release.  No lease function raises an
 * error, allocates memory or reads the catalogs while it holds it: each
 * takes it in one function that decides and commits, returning the outcome
 * as plain data.  The one exception is a failed write of the file here (in
 * LockLeaseTableForChange(), CommitLeaseImage() and redo), whose ERROR
 * leaves the release to abort processing (LWLockReleaseAll).
 */
#ifndef SNOWFLAKE_PG_LEASE_TABLE_HPP
#define SNOWFLAKE_PG_LEASE_TABLE_HPP

extern "C"
{
#include "postgres.h"

#include "access/xlogreader.h"	/* XLogReaderState */
#include "lib/stringinfo.h"
#include "datatype/timestamp.h"
#include "port/atomics.h"
#include "port/pg_crc32c.h"
#include "storage/lwlock.h"
#include "utils/uuid.h"
}

#include "core/layout.hpp"
#include "core/lease_rules.hpp"
#include "pg/data_directory.hpp" /* kLeaseStateFileName */

/* The longest holder description a lease keeps, in bytes. */
constexpr int kMaxHolderBytes = 200;

/* The size of an entry's block in the file: one disk sector. */
constexpr int kLeaseBlockSize = 512;

/* Image flags. */
constexpr uint32 kLeaseReleased = 0x1;	/* released (or revoked) */
constexpr uint32 kLeaseRevoked = 0x2;   /* released by another role */

/*
 * One worker id's last lease, as the file and the WAL carry it.  Plain
 * data; the CRC covers every byte before it.
 */
struct LeaseImage
{
	uint32		magic;			/* kLeaseImageMagic; 0: an empty block */
	uint32		worker_id;
	int32		node_id;
	uint32		flags;
	uint64		change;			/* server-wide change number */
	int64		token;			/* of the last grant; 0: never leased */
	Oid			holder_role;	/* current_user of the grant */
	int32		backend_pid;	/* connection-scoped: the holding backend ... */
	TimestampTz backend_start;	/* ... its start ... */
	pg_uuid_t instance_id;      /* ... and the run of the server */
	int64		ttl_ms;			/* 0: connection-scoped */
	int64		window_ms;		/* the ttl, or the connection window */
	int64		layout_epoch_ms;	/* the layout of the grant */
	int16		layout_node_bits;
	int16		layout_worker_bits;
	int16		layout_sequence_bits;
	int16		padding;
	TimestampTz granted_at;
	TimestampTz renewed_at;
	TimestampTz released_at;	/* 0 unless released */
	int64		not_before_ms;	/* Unix ms: the holder's IDs lie above ... */
	int64		not_after_ms;	/* ... and below */
	int64		last_timestamp_ms;	/* reported; snowflake::kNoTimestamp: none */
	char		holder[kMaxHolderBytes + 1];
	char		application_name[NAMEDATALEN];
	char		client_addr[48];	/* numeric; "" for a Unix socket */
	pg_crc32c	crc;
};

static_assert(sizeof(LeaseImage) <= kLeaseBlockSize, "a lease image must fit its block");

constexpr uint32 kLeaseImageMagic = 0x534c4531;	/* "SLE1" */

/* The magic of a block of a worker id never leased: the rest is zeros. */
constexpr uint32 kLeaseEmptyMagic = 0x534c4530;	/* "SLE0" */

/* Room for the kernel's boot id, a UUID in text. */
constexpr int kBootIdSize = 40;

/* Block 0 of the file.  Plain data; the CRC covers every byte before it. */
struct LeaseFileHeader
{
	uint32		magic;			/* kLeaseHeaderMagic */
	uint32		clean;			/* 1: written at a clean shutdown */
	uint32		settle;			/* 1: the next change settles, whatever clean says */
	uint32		blocks;			/* blocks written whole, this one included */
	int32 node_id;              /* snowflake.node_id at the last start */
	int32 padding;
	int64		last_token;		/* at least the largest token granted */
	uint64		last_change;	/* at least the largest change number written */
	char		boot_id[kBootIdSize];	/* the machine's boot at the last start; "" unknown */
	pg_crc32c	crc;
};

static_assert(sizeof(LeaseFileHeader) <= kLeaseBlockSize, "the header must fit its block");
static_assert(offsetof(LeaseFileHeader, crc) == 80,
			  "test/perl/SnowflakeLeaseFile.pm knows it");

constexpr uint32 kLeaseHeaderMagic = 0x534c4833; /* "SLH3" */

/*
 * How many tokens a millisecond of wall-clock time makes room for, after a
 * promotion (see above).  The millisecond now times 1024 is about 2^51, so
 * tokens stay below 2^53 (exact in a JavaScript number) until the year
 * 2248, and an int64 holds about 2^62 grants above it.
 */
constexpr int64 kTokensPerMs = int64{1} << 10;

struct LeaseEntry
{
	LeaseImage	image;
	/* Connection-scoped: its backend still runs (this run only; not stored). */
	bool		connected;
};

struct LeaseTable
{
	LWLock	   *lock;			/* guards the fields below but written_change
								 * (atomic) and synced_change */
	LWLock	   *sync_lock;		/* serialises fsyncs of the file */
	uint32		first_worker_id;
	uint32		count;			/* snowflake.lease_workers */
	int64		last_token;		/* the largest token ever granted here */
	uint64		last_change;	/* the largest change number applied */
	pg_atomic_uint64 written_change;	/* in the file's page cache up to here */
	uint64		synced_change;	/* fsynced up to here (under sync_lock) */
	uint32		file_blocks;	/* blocks of the file, its header included */
	char		boot_id[kBootIdSize];	/* the machine's boot, "" if unknown */
	bool		settled;		/* the first change of this run is done */
	bool		needs_bump;		/* settling moves not_after (see above) */
	LeaseEntry	entries[FLEXIBLE_ARRAY_MEMBER];
};

/* Its part of the shared-memory hooks, which module.cpp installs (after the shared state's). */
void		RequestLeaseTable(void);
void		StartLeaseTable(void);

/* The lease table; ERROR if the library was not preloaded. */
LeaseTable *RequireLeaseTable(void);

/*
 * What an entry says, read the same way by the grant, the renewal and
 * snowflake_leases.  Callers hold the table's lock or read a copy.
 */
enum class LeaseState
{
	kNeverLeased,				/* no lease under this server's layout */
	kHeld,
	kReleased,					/* released or revoked */
	kExpired,					/* time-scoped, past its not_after */
	kDisconnected				/* connection-scoped, its backend gone */
};

LeaseState	StateOfLease(const LeaseEntry &entry, int64 now_ms);

/* The entry as the core's rules read it. */
snowflake::LeaseHistory LeaseHistoryOf(const LeaseEntry &entry, int64 now_ms);

/* Whether the entry is a connection-scoped lease of this backend, still held. */
bool		HeldByThisBackend(const LeaseEntry &entry);

/* Whether an image was made under "layout", by any node id. */
bool LeaseImageOfLayout(const LeaseImage &image, const snowflake::Layout &layout);

/*
 * The last Unix ms in which the holder of "image" may issue IDs: its
 * not_after, or where it said it stopped (released by itself); with
 * "settling", an unreleased lease may have been renewed up to now plus its
 * window.  0 for an empty block.
 */
int64 LeaseMayIssueUntilMs(const LeaseImage &image, bool settling, int64 now_ms);

/* The interval of "ms" milliseconds, as a Datum (palloc'd). */
Datum		IntervalMsDatum(int64 ms);

/* Takes the lock exclusively, settling first at the run's first change (see above). */
void		LockLeaseTableForChange(LeaseTable *table);

/*
 * Makes "image", a changed copy of entry "index" (lock taken with
 * LockLeaseTableForChange()), its new state: numbered, written, WAL-logged
 * and published.  Returns the change number; *lsn is the record's.
 */
uint64		CommitLeaseImage(LeaseTable *table, uint32 index, LeaseImage *image,
							 bool connected, XLogRecPtr *lsn);

/*
 * Returns once change "change" (record at "lsn") survives a crash: file
 * fsynced, WAL confirmed by synchronous standbys if any.  Without the lock.
 */
void		MakeLeaseChangeDurable(LeaseTable *table, uint64 change, XLogRecPtr lsn);

/* Registers, once per backend, the exit callback that ends its connection leases. */
void		WatchConnectionLeases(void);

/* Redo of a LEASE record. */
void		ReplayLeaseRecord(XLogReaderState *record);

/* Describes a LEASE record for pg_waldump. */
void		DescribeLeaseRecord(StringInfo buf, XLogReaderState *record);

#endif							/* SNOWFLAKE_PG_LEASE_TABLE_HPP */
