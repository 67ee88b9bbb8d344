/*
 * shared_state.hpp
 *	  The shared-memory state of snowflake: one slot per worker id.
 *
 * Worker slot: the shared half of a worker id.  It records who holds the id
 * and the high-water mark (the last ID issued under it), which outlives each
 * holder so that the next one continues strictly after it.
 *
 * Who writes what:
 *	- owner_pid changes only by compare-and-swap (claim) or by its holder
 *	  (release); it is the arbiter of ownership.
 *	- The holder alone writes last_id, holder_ids, overflow_waits and the
 *	  descriptive fields; readers such as the snowflake_workers view read
 *	  them without a lock and may see a slightly stale row.
 *
 * The structs are plain data: no constructors, no pointers into a process's
 * own memory.
 */
#ifndef SNOWFLAKE_PG_SHARED_STATE_HPP
#define SNOWFLAKE_PG_SHARED_STATE_HPP

#include "postgres_headers.hpp"

struct WorkerSlot
{
	pg_atomic_uint32 owner_pid;		/* 0 when free */
	Oid			database_id;
	Oid			user_id;
	TimestampTz claimed_at;
	uint64		released_order;		/* release_counter at last release; LRU key */
	pg_atomic_uint64 last_id;		/* high-water mark */
	pg_atomic_uint64 holder_ids;	/* IDs issued by the current holder */
	pg_atomic_uint64 earlier_ids;	/* IDs issued by earlier holders */
	pg_atomic_uint64 overflow_waits;	/* waits for the clock, all holders */
};

/*
 * Each slot gets a cache line of its own: its holder writes it on every ID,
 * and neighbours must not share that line.
 */
union PaddedWorkerSlot
{
	WorkerSlot	slot;
	char		pad[PG_CACHE_LINE_SIZE];
};

static_assert(sizeof(WorkerSlot) <= PG_CACHE_LINE_SIZE,
			  "a worker slot must fit one cache line");

struct SharedState
{
	int64		started_unix_ms;	/* wall clock when this memory was set up */
	pg_atomic_uint64 release_counter;
	uint32		slot_count;

	/*
	 * The durable reservation (reservation.cpp): no slot issues a timestamp
	 * beyond reserved_until (ms since the layout's epoch).  The floor is set
	 * once recovery has ended: no slot issues a timestamp below it.
	 */
	LWLock	   *reservation_lock;	/* serialises extending it and the floor */
	pg_atomic_uint64 reserved_until;
	/* Set while another running instance uses our node_id; read on the hot path. */
	pg_atomic_uint32 node_collision;
	int64		durable_until;	/* largest value made durable (under the lock) */
	XLogRecPtr	durable_lsn;	/* the record that made it durable */
	bool		reservation_known;	/* read from the file or replayed */
	bool		floor_ready;
	bool		floor_from_reservation;	/* else from the start time */
	int64		floor_timestamp;
	pg_atomic_uint32 gap_reported;	/* the clock-behind WARNING was logged */
	pg_atomic_uint64 reservations;	/* reservation records written */

	/*
	 * This run's identity in snowflake_nodes (random per start, so a clone
	 * or a promoted standby differs from its origin), and what the registry
	 * worker last found and did (node_registry.cpp).
	 */
	pg_uuid_t	instance_id;
	slock_t		collision_mutex;	/* guards the next three */
	char		collision_detail[256];
	TimestampTz registry_last_round;	/* the last round that completed; 0: none */
	char		registry_problem[256];	/* why rounds do not complete; "" if they do */
	pg_atomic_uint32 registry_starts;	/* registry workers started in this run */

	/* Backward steps of the wall clock, seen by the background worker. */
	pg_atomic_uint64 clock_steps_back;
	pg_atomic_uint64 largest_step_back_ms;

	PaddedWorkerSlot slots[FLEXIBLE_ARRAY_MEMBER];

	WorkerSlot *Slot(uint32 worker_id) { return &slots[worker_id].slot; }
};


/* Installs the shared-memory hooks; called from _PG_init. */
void		InstallSharedStateHooks(void);

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

#endif							/* SNOWFLAKE_PG_SHARED_STATE_HPP */
