/*
 * worker_slot.hpp
 *	  Claiming and releasing a worker slot through a session advisory lock.
 *
 * A backend holds at most one slot.  The claim takes a session-level advisory
 * lock on (database 0, kSlotLockClass, worker_id), so it shows in pg_locks
 * and dies with the session like a ZooKeeper ephemeral node; it also swaps
 * the slot's owner_pid from 0 to the backend's pid, which is what the
 * generator trusts.  The lock alone is not enough: pg_advisory_unlock_all()
 * and DISCARD ALL drop every session advisory lock of the session.
 */
#ifndef SNOWFLAKE_PG_WORKER_SLOT_HPP
#define SNOWFLAKE_PG_WORKER_SLOT_HPP

#include "shared_state.hpp"

/* classid of the slot locks in pg_locks: the bytes "snow". */
constexpr uint32 kSlotLockClass = 0x736E6F77;

/*
 * Claims the least recently used free slot, waiting up to
 * snowflake.claim_timeout for one; ERROR on time-out.  The slot is released
 * when the backend exits, or by ReleaseHeldSlot().  The caller holds none.
 */
WorkerSlot *ClaimWorkerSlot(SharedState *state, uint32 *worker_id);

/* Hands back the slot this backend holds.  False if it holds none. */
bool		ReleaseHeldSlot(void);

#endif							/* SNOWFLAKE_PG_WORKER_SLOT_HPP */
