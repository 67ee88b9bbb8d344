/*
 * lease_table.hpp
 *	  The worker-id leases of this server: one entry per worker id of the
 *	  lease space, in shared memory, kept the way the reservation is kept.
 *
 * Every change of an entry (a grant, a renewal, a release) is a complete
 * new image of that entry, numbered by a server-wide change counter.  It is
 *	- written into $PGDATA/snowflake.lease_state, at the entry's own 512-byte
 *	  block;
 *	- WAL-logged with the extension's resource manager, so standbys replay
 *	  it (and write their own file), and a promoted standby knows it;
 *	- published in shared memory.
 * Replay applies an image only if its change number is newer than the
 * entry's: the file and the WAL may each be ahead of the other.
 *
 * What must survive a crash or a failover before the caller sees it: a
 * grant (its token and window) and a revocation.  Those are fsynced, and
 * with synchronous standbys flushed and confirmed.  A renewal or a release
 * by its holder is written with pwrite() and WAL-logged, but neither
 * fsynced nor flushed.  What can lose such a write:
 *	- a crash of PostgreSQL alone (a backend killed, the postmaster's crash
 *	  restart, kill -9 of the postmaster and a start on the same machine)
 *	  cannot: the kernel's page cache outlives the processes, so the file
 *	  is complete, and the WAL redo of a crash restart finds nothing newer
 *	  than the file (every image is written before it is logged);
 *	- a crash of the machine can: the page cache is lost;
 *	- a promotion can: the standby misses the records it had not received;
 *	- a copy of the data directory can: a backup (restored with its
 *	  backup_label, or as a standby or a point-in-time recovery), a
 *	  snapshot, pg_basebackup.
 * For those, the first change of the run "settles" the table, taking every
 * lease not released to have been renewed then (its not_after moves to
 * now + its window).  That covers whatever a lost renewal could have
 * promised, and a lost release only keeps a worker id taken a little
 * longer.  The header (block 0; worker id 0 always belongs to sessions)
 * tells which start needs it: it records whether the last shutdown was
 * clean, and the kernel's boot id of the last start
 * (/proc/sys/kernel/random/boot_id).  A start settles if
 *	- the last shutdown was not clean and the boot id differs (the machine
 *	  restarted since, or the file came from another machine: a restored
 *	  backup, a copied snapshot) or cannot be read (then every start after
 *	  a crash settles);
 *	- standby.signal, recovery.signal or backup_label is present (a standby,
 *	  a point-in-time recovery, a restored backup; a standby settles once
 *	  promoted);
 *	- the header says a settle is pending: it is written at a start that
 *	  needs one, and cleared by the settle, so a crash in between (a
 *	  promoted standby that crashes before its first change) settles again;
 *	- redo applied an image newer than the file's (the file lost a write).
 * Not caught: a snapshot of the data directory restored on the same
 * machine in the same boot, without a backup_label: it looks like a crash
 * restart.  Restore such a snapshot as a backup (docs/leases.md).
 * pg_upgrade needs the old cluster stopped cleanly, and the operator
 * copies its file into the new data directory (data_directory.cpp; the
 * binary-upgrade start itself creates no file): clean, so nothing to
 * settle, though the boot id may differ.  A lease that expired
 * before a crash that needs no settle stays expired.
 *
 * Tokens: every grant's token is one above the largest the server knows,
 * from the file's blocks, its header (a lower bound written at each grant,
 * at each settle and at a clean shutdown) and the replayed records.  The
 * first change of each run raises the largest to at least the Unix
 * millisecond of that moment times kTokensPerMs.  A promoted asynchronous
 * standby may have missed some of the old primary's grants, and a restored
 * backup or a copied data directory lacks those made after the copy; every
 * one of those lies below, unless the old server granted more than
 * kTokensPerMs a millisecond on average since its own last start (each
 * grant is fsynced), or the new one's clock is behind the old one's by
 * more than the time between the old one's last start and the new one's
 * start.  The timeline alone would not do: two standbys of one primary,
 * promoted one after the other without a shared WAL archive, both pick
 * the same next timeline, and a restored backup keeps the timeline.
 *
 * A damaged file stops the start (FATAL): a block with a wrong checksum, of
 * another worker id, of zeros, or not a lease image, and a header that is
 * not valid.  No valid file has a block of zeros: every block is written
 * when the file is created or grows, as an "empty" image with a CRC.  A file
 * of version 1.5 (header "SLH1", zero blocks for ids never leased) is read
 * once by that version's rules and rewritten in this format.
 *
 * None of it is transactional: once a caller could have seen a change, no
 * rollback undoes it.  Tokens come from a counter that the images and the
 * header carry, so none is ever handed out twice, across crashes too.
 *
 * Locking: one LWLock guards the entries, held for a few microseconds per
 * change (copy, write into the page cache, WAL insert); the fsync and the
 * wait for synchronous standbys happen after it is released.
 *
 * Errors and the lock: the lease functions never raise an error while they
 * hold it.  Each takes it in one function that decides (and commits the
 * change, if any), returns the outcome as plain data and releases it; the
 * caller reports from that outcome, then makes the change durable and
 * builds its row.  Nothing under the lock allocates memory (timestamps are
 * formatted for messages after the release) or reads the catalogs.  The
 * one exception is a failed write of the file in lease_table.cpp (in
 * LockLeaseTableForChange(), CommitLeaseImage() and redo): that ERROR
 * leaves the release to abort processing (LWLockReleaseAll), as any ERROR
 * does.
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
constexpr uint32 kLeaseRevoked = 0x2;	/* released by another role */
constexpr uint32 kLeaseImported = 0x4;	/* carried over from version 1.4 */

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
	union
	{
		pg_uuid_t	instance_id;	/* ... and the run of the server */
		Oid			v14_database;	/* kLeaseImported: the database whose 1.4
									 * table held it (lease_v14.cpp) */
	};
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
	int64		last_token;		/* at least the largest token granted */
	uint64		last_change;	/* at least the largest change number written */
	char		boot_id[kBootIdSize];	/* the machine's boot at the last start; "" unknown */
	pg_crc32c	crc;
};

static_assert(sizeof(LeaseFileHeader) <= kLeaseBlockSize, "the header must fit its block");
static_assert(offsetof(LeaseFileHeader, crc) == 72,
			  "test/perl/SnowflakeLeaseFile.pm knows it");

constexpr uint32 kLeaseHeaderMagic = 0x534c4832;	/* "SLH2" */

/* Version 1.5's header: magic, clean, CRC; zero blocks for ids never leased. */
constexpr uint32 kLeaseHeaderMagicV15 = 0x534c4831;	/* "SLH1" */

/*
 * How many tokens a millisecond of wall-clock time makes room for, after a
 * promotion (see above).  The millisecond now times 1024 is about 2^51, so
 * tokens stay below 2^53 (exact in a JavaScript number) until the year
 * 2248, and an int64 holds about 2^62 grants above it.
 */
constexpr int kTokensPerMsShift = 10;
constexpr int64 kTokensPerMs = int64{1} << kTokensPerMsShift;

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

/* Installs the shared-memory hooks of the lease table; _PG_init. */
void		InstallLeaseTableHooks(void);

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

/* Whether the entry's lease is held now (StateOfLease() is kHeld). */
bool		LeaseIsHeld(const LeaseEntry &entry, int64 now_ms);

/* Whether the entry is a connection-scoped lease of this backend, still held. */
bool		HeldByThisBackend(const LeaseEntry &entry);

/* Whether an image was made under "layout" by node "node_id". */
bool		LeaseImageMadeUnder(const LeaseImage &image, const snowflake::Layout &layout,
								int node_id);

/* The interval of "ms" milliseconds, as a Datum (palloc'd). */
Datum		IntervalMsDatum(int64 ms);

/*
 * Takes the table's lock exclusively for a change, settling the table
 * first if this is the first change of the run (see above): callers read
 * the entries they change only after this.
 */
void		LockLeaseTableForChange(LeaseTable *table);

/*
 * Makes "image" (a copy of the entry at "index", changed by the caller, who
 * took the lock with LockLeaseTableForChange()) the entry's new state: numbers it,
 * writes it into the file, WAL-logs it and publishes it.  Returns the
 * change number and sets *lsn to the record's position; the caller then
 * releases the lock and calls MakeLeaseChangeDurable().
 */
uint64		CommitLeaseImage(LeaseTable *table, uint32 index, LeaseImage *image,
							 bool connected, XLogRecPtr *lsn);

/*
 * Returns once change "change" (record at "lsn") survives a crash: the
 * file is fsynced up to it and, with synchronous standbys, the WAL is
 * flushed and confirmed by them.  For grants and revocations; call without
 * the table's lock.
 */
void		MakeLeaseChangeDurable(LeaseTable *table, uint64 change, XLogRecPtr lsn);

/*
 * For a renewal or a release by its holder: lets the WAL writer ship the
 * record (at "lsn") to standbys soon, without waiting (see above).
 */
void		PublishLeaseChange(XLogRecPtr lsn);

/*
 * Registers, once per backend, the exit callback that marks the backend's
 * connection-scoped leases as ended.
 */
void		WatchConnectionLeases(void);

/* Redo of a LEASE record. */
void		ReplayLeaseRecord(XLogReaderState *record);

/* Describes a LEASE record for pg_waldump. */
void		DescribeLeaseRecord(StringInfo buf, XLogReaderState *record);

#endif							/* SNOWFLAKE_PG_LEASE_TABLE_HPP */
