/*
 * worker_slot.hpp
 *	  Attaching sessions to worker slots, and detaching them.
 *
 * Any number of backends may be attached to one slot: a session never
 * waits for a slot and is never refused one.  The attachment takes a
 * session-level advisory lock on (database 0, kSlotLockClass, worker_id)
 * in ShareLock mode, so that pg_locks shows every session of every slot
 * and the lock dies with the session like a ZooKeeper ephemeral node.
 * The lock is for display: the slot's session count is what attaching
 * trusts, because pg_advisory_unlock_all() and DISCARD ALL drop every
 * session advisory lock of the session.
 */
#ifndef SNOWFLAKE_PG_WORKER_SLOT_HPP
#define SNOWFLAKE_PG_WORKER_SLOT_HPP

#include "pg/shared_state.hpp"

/* classid of the slot locks in pg_locks: the bytes "snow". */
constexpr uint32 kSlotLockClass = 0x736E6F77;

/*
 * Attaches this backend to the slot with the fewest sessions (ties: the
 * least recently released, then the lowest id), and returns it, its worker
 * id and this backend's attachment entry.  Never waits for a slot.  The
 * backend is detached when it exits, or by DetachWorkerSlot().  The caller
 * is attached to none.
 */
WorkerSlot *AttachWorkerSlot(SharedState *state, uint32 *worker_id,
							 SessionAttachment **attachment);

/* Detaches this backend from its slot.  False if it was attached to none. */
bool		DetachWorkerSlot(void);

#endif							/* SNOWFLAKE_PG_WORKER_SLOT_HPP */
