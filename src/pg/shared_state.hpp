/*
 * shared_state.hpp
 *	  The shared-memory state of snowflake: one slot per worker id, and one
 *	  attachment entry per backend.
 *
 * Worker slot: the shared half of a worker id.  Any number of sessions may
 * attach to it; it holds the high-water mark (the last ID issued under it,
 * as one word advanced by compare-and-swap, see src/core/generator.hpp),
 * which outlives every session, so whoever issues next continues strictly
 * after it.
 *
 * Attachment: which slot a backend is attached to, and what it issued
 * there, in an array indexed by backend.  Only its backend writes an
 * entry, with plain stores, so counting IDs costs no shared atomic
 * increment.
 *
 * Who writes what:
 *	- last_id changes only by compare-and-swap, by any session of the slot.
 *	- sessions changes by compare-and-swap (attach) and atomic decrement
 *	  (detach); it is the arbiter of which slot is least loaded.
 *	- An attachment is written only by its backend: pid last on attach and
 *	  first on detach, so a reader that sees a pid sees the rest.  Readers
 *	  such as the snowflake_workers view take no lock and may see a
 *	  slightly stale row.
 *
 * Each subsystem sets up its own fields through the initializer module.cpp
 * installs.  The structs are plain data: no constructors, no pointers into
 * a process's own memory.
 */
#ifndef SNOWFLAKE_PG_SHARED_STATE_HPP
#define SNOWFLAKE_PG_SHARED_STATE_HPP

extern "C"
{
#include "postgres.h"

#include "access/xlogdefs.h"	/* XLogRecPtr */
#include "datatype/timestamp.h"
#include "port/atomics.h"
#include "storage/lwlock.h"
#include "storage/spin.h"	/* slock_t */
#include "utils/uuid.h"
}

#include "core/clock_steps.hpp"

struct WorkerSlot
{
	pg_atomic_uint64 last_id;		/* high-water mark; 0 before any */
	pg_atomic_uint32 sessions;		/* sessions attached now */
	pg_atomic_uint64 released_order;	/* release_counter at last detach; LRU key */
	pg_atomic_uint64 earlier_ids;	/* IDs issued by sessions since detached */
	pg_atomic_uint64 overflow_waits;	/* waits for the clock, all sessions */
};

/*
 * Each slot gets a cache line of its own: its sessions swap its mark on
 * every ID, and neighbours must not share that line.  The alignment places
 * the slots array on a line boundary within SharedState (shared memory
 * allocations start on one), so no slot straddles two lines.
 */
union alignas(PG_CACHE_LINE_SIZE) PaddedWorkerSlot
{
	WorkerSlot	slot;
	char		pad[PG_CACHE_LINE_SIZE];
};

static_assert(sizeof(WorkerSlot) <= PG_CACHE_LINE_SIZE,
			  "a worker slot must fit one cache line");

struct SessionAttachment
{
	pg_atomic_uint32 pid;			/* 0 when not attached */
	uint32		worker_id;
	Oid			database_id;
	Oid			user_id;		/* the current role when it attached */
	Oid			session_user_id;	/* as pg_stat_activity has it; see status.cpp */
	TimestampTz attached_at;
	pg_atomic_uint64 ids_issued;	/* since attaching; its backend writes it */
};

/* Its backend writes ids_issued on every ID: a cache line of its own. */
union PaddedSessionAttachment
{
	SessionAttachment attachment;
	char		pad[PG_CACHE_LINE_SIZE];
};

static_assert(sizeof(SessionAttachment) <= PG_CACHE_LINE_SIZE,
			  "an attachment must fit one cache line");

/*
 * One node registry: the "snowflake registry" worker of one database
 * (registry/registry_slots.hpp says who writes what).
 */
constexpr int kRegistrySlotCount = 16;
constexpr int kProbeRequestCount = 8;

enum RegistryPhase : uint32
{
	kRegistryFree,     /* database is InvalidOid */
	kRegistryStarting, /* started; has not found the extension yet */
	kRegistryRunning,  /* found it: runs rounds */
	kRegistryStopped,  /* its worker is gone; the launcher decides */
};

struct RegistrySlot
{
	Oid database;
	uint32 phase;           /* a RegistryPhase */
	int pid;                /* its worker's, while it runs; else 0 */
	bool absent;            /* its worker found no extension */
	bool dropping;          /* DROP DATABASE asked its worker to exit */
	TransactionId dropping_xid; /* the transaction of that DROP DATABASE */
	bool reprobe;           /* the extension changed while it was starting */
	bool collision;         /* its last round saw a running peer */
	TimestampTz last_round; /* the last round that completed; 0: none */
	TimestampTz started_at; /* when its current registry was started */
	char problem[256];      /* why rounds do not complete; "" if they do */
	/* Its last comparison of clocks (registry/clock_skew.hpp). */
	int32 clock_peers;        /* running peers whose clock it compared */
	int32 clock_skewed_peers; /* of those, disagreeing beyond the threshold */
	int64 clock_skew_ms;      /* the largest proven disagreement, signed; 0: none */
	int32 clock_skew_node;    /* the node id of that peer */
	bool clock_skewed;        /* disagrees with more than half of them */
};

/* The bits of SharedState::registry_findings. */
constexpr uint32 kFindingNodeCollision = 1; /* another running instance has our node_id */
constexpr uint32 kFindingClockSkew = 2;     /* our clock disagrees with most peers' */

struct SharedState
{
	int64		started_unix_ms;	/* wall clock when this memory was set up */
	pg_atomic_uint64 release_counter;
	uint32		slot_count;

	/*
	 * The durable reservation (reservation/reservation.cpp): no slot issues a timestamp
	 * beyond reserved_until (ms since the layout's epoch).  The floor is set
	 * once recovery has ended: no slot issues a timestamp below it.
	 */
	LWLock	   *reservation_lock;	/* serialises extending it and the floor */
	pg_atomic_uint64 reserved_until;
	/*
	 * What the registries found that may stop generation (kFinding...
	 * bits); read on the hot path, where any bit sends a call to the slow
	 * path, which applies this session's policies.
	 */
	pg_atomic_uint32 registry_findings;
	int64		durable_until;	/* largest value made durable (under the lock) */
	XLogRecPtr	durable_lsn;	/* the record that made it durable */
	bool		reservation_known;	/* read from the file or replayed */
	bool		floor_ready;
	bool		floor_from_reservation;	/* else from the start time */
	/*
	 * The reservation is the newest timestamp issued before a clean
	 * shutdown: read from the file after one, not raised by WAL replay since
	 * (reservation_exact), and the floor was fixed from it
	 * (floor_after_clean_shutdown).  A clock behind such a floor by at most
	 * max_drift is the borrow of max_drift at work, not a sign of trouble.
	 */
	bool reservation_exact;
	bool floor_after_clean_shutdown;
	int64		floor_timestamp;
	pg_atomic_uint32 gap_reported;  /* the clock-behind message was logged */
	pg_atomic_uint64 reservations;	/* reservation records written */

	/*
	 * This run's identity in snowflake_nodes (random per start, so a clone
	 * or a promoted standby differs from its origin), and what the
	 * registries last found (registry/node_registry.cpp).
	 */
	pg_uuid_t	instance_id;
	slock_t collision_mutex; /* guards the next two */

	/*
	 * What shows the running peer: for the client, with its instance id
	 * only (which every role may read in snowflake_nodes); for the server
	 * log, with its full description (host, port, timeline, system
	 * identifier).
	 */
	char		collision_client[192];
	char		collision_detail[256];
	bool		collision_split_brain;	/* found by split_brain.hpp: its hint */

	/*
	 * The registries, one per database that holds the extension, and their
	 * launcher (registry/registry_slots.hpp).
	 */
	slock_t registry_mutex;                 /* guards the fields before registry_starts */
	int launcher_pid;                       /* 0 while no launcher runs */
	char launcher_problem[256];             /* "" if none */
	Oid probe_requests[kProbeRequestCount]; /* databases to probe again */
	/* Probe even a template or a database refusing connections: IDs are made there. */
	bool probe_whatever_flags[kProbeRequestCount];
	uint32 probe_request_count;
	bool probe_all; /* the requests overflowed: probe every database */
	RegistrySlot registries[kRegistrySlotCount];
	pg_atomic_uint32 registry_starts; /* named mode: registry workers started */

	/*
	 * Backward steps of the wall clock, seen by the reservation worker
	 * (set up with the reservation's fields).
	 */
	pg_atomic_uint64 clock_steps_back;
	pg_atomic_uint64 largest_step_back_ms;

	/*
	 * The trusted wall clock (clock_watch.cpp): every process that reads
	 * the clock observes steps into clock_trust, under clock_mutex.
	 */
	slock_t		clock_mutex;
	snowflake::ClockTrust clock_trust;
	pg_atomic_uint64 clock_steps_forward;
	pg_atomic_uint64 largest_step_forward_ms;
	pg_atomic_uint64 last_clock_step_unix_ms;	/* trusted time of the last step; 0: none */

	/* One attachment per backend (MaxBackends), after the slots. */
	uint32		attachment_count;
	Size		attachments_offset;

	PaddedWorkerSlot slots[FLEXIBLE_ARRAY_MEMBER];

	WorkerSlot *Slot(uint32 worker_id) { return &slots[worker_id].slot; }
	SessionAttachment *Attachment(uint32 index)
	{
		return &reinterpret_cast<PaddedSessionAttachment *>(
			reinterpret_cast<char *>(this) + attachments_offset)[index].attachment;
	}
};


/* The LWLock tranche of the extension, with one lock: reservation_lock. */
constexpr const char *kSharedLockTrancheName = "snowflake";

/*
 * Its part of the shared-memory hooks, which module.cpp installs.
 * "initialize" sets up the subsystems' fields under AddinShmemInitLock,
 * after the common fields and the slots, each time the memory is created:
 * at start and after every crash restart.
 */
using SharedStateInitializer = void (*)(SharedState *state);

void		RequestSharedState(void);
void		StartSharedState(SharedStateInitializer initialize);

/*
 * The newest timestamp (ms since the layout's epoch) any slot issued since
 * shared memory was set up, or -1.  Reads every slot without a lock.
 */
int64		NewestIssuedTimestamp(SharedState *state);

/*
 * The shared state, or an ERROR with a hint when the library was not loaded
 * through shared_preload_libraries.
 */
SharedState *RequireSharedState(void);

/* The shared state, or nullptr when the library was not preloaded. */
SharedState *SharedStateIfAttached(void);

#endif							/* SNOWFLAKE_PG_SHARED_STATE_HPP */
