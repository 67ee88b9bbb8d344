/*
 * worker_slot.cpp
 *	  Attaching sessions to worker slots: least loaded first, never a wait,
 *	  detached on every exit path.
 *
 * Detach paths: snowflake_release_worker(), and a before_shmem_exit
 * callback that runs on normal exit, FATAL and pg_terminate_backend.  A
 * backend that dies without running it (kill -9, a crash) makes the
 * postmaster reinitialise shared memory, which detaches everybody.
 */
extern "C"
{
#include "postgres.h"

#include "miscadmin.h"		/* MyProcPid, MyDatabaseId, GetUserId */
#include "port/atomics.h"
#if PG_VERSION_NUM >= 170000
#include "storage/procnumber.h" /* MyProcNumber */
#else
#include "storage/backendid.h"	/* MyBackendId */
#endif
#include "storage/ipc.h"		/* before_shmem_exit */
#include "storage/lock.h"
#include "utils/backend_status.h"	/* MyBEEntry */
#include "utils/timestamp.h"
}

#include "pg/slots/worker_slot.hpp"

static SharedState *attached_state = nullptr;
static WorkerSlot *attached_slot = nullptr;
static SessionAttachment *my_attachment = nullptr;
static uint32 attached_worker_id = 0;
static bool exit_callback_registered = false;

static LOCKTAG
SlotLockTag(uint32 worker_id)
{
	LOCKTAG		tag;

	/* Database 0: a slot is unique in the whole cluster, not per database. */
	SET_LOCKTAG_ADVISORY(tag, InvalidOid, kSlotLockClass, worker_id, 2);
	return tag;
}

static void
DetachAtExit(int code, Datum arg)
{
	(void) code;
	(void) arg;
	DetachWorkerSlot();
}

/* This backend's entry in the attachment array. */
static SessionAttachment *
MyAttachment(SharedState *state)
{
#if PG_VERSION_NUM >= 170000
	int			index = MyProcNumber;
#else
	int			index = MyBackendId - 1;
#endif

	if (index < 0 || static_cast<uint32>(index) >= state->attachment_count)
		elog(ERROR, "snowflake: backend index %d is outside the attachment array", index);
	return state->Attachment(static_cast<uint32>(index));
}

/*
 * The role pg_stat_activity shows for this session (the session user when
 * it started), on which it decides who may see the session's details.
 */
static Oid
PgstatUserId(void)
{
	return MyBEEntry != nullptr ? MyBEEntry->st_userid : GetSessionUserId();
}

/*
 * The slot with the fewest sessions; among those, the least recently
 * released, so that a just-freed id is handed out last (ShardingSphere
 * #190), and never-used slots first, by id.  *sessions is the count read.
 */
static uint32
LeastLoadedSlot(SharedState *state, uint32 *sessions)
{
	uint32		best = 0;
	uint32		best_sessions = PG_UINT32_MAX;
	uint64		best_order = 0;

	for (uint32 worker_id = 0; worker_id < state->slot_count; worker_id++)
	{
		WorkerSlot *slot = state->Slot(worker_id);
		uint32		n = pg_atomic_read_u32(&slot->sessions);
		uint64		order = pg_atomic_read_u64(&slot->released_order);

		if (n < best_sessions || (n == best_sessions && order < best_order))
		{
			best = worker_id;
			best_sessions = n;
			best_order = order;
		}
	}
	*sessions = best_sessions;
	return best;
}

WorkerSlot *
AttachWorkerSlot(SharedState *state, uint32 *worker_id, SessionAttachment **attachment)
{
	SessionAttachment *mine = MyAttachment(state);
	uint32		chosen;

	Assert(attached_slot == nullptr);
	if (!exit_callback_registered)
	{
		before_shmem_exit(DetachAtExit, 0);
		exit_callback_registered = true;
	}

	/*
	 * Take the lock first: it may fail (no lock memory), and then nothing
	 * has changed.  ShareLock never conflicts with another session's, so
	 * this does not wait.  The count's compare-and-swap fails only if
	 * another session attached or detached at the same moment; then look
	 * again, so that concurrent sessions spread over the slots.
	 */
	for (;;)
	{
		uint32		sessions;

		chosen = LeastLoadedSlot(state, &sessions);

		LOCKTAG		tag = SlotLockTag(chosen);

		(void) LockAcquire(&tag, ShareLock, true, false);
		if (pg_atomic_compare_exchange_u32(&state->Slot(chosen)->sessions,
										   &sessions, sessions + 1))
			break;
		LockRelease(&tag, ShareLock, true);
	}

	mine->worker_id = chosen;
	mine->database_id = MyDatabaseId;
	mine->user_id = GetUserId();
	mine->session_user_id = PgstatUserId();
	mine->attached_at = GetCurrentTimestamp();
	pg_atomic_write_u64(&mine->ids_issued, 0);
	/* Readers that see the pid must see the rest. */
	pg_write_barrier();
	pg_atomic_write_u32(&mine->pid, static_cast<uint32>(MyProcPid));

	attached_state = state;
	attached_slot = state->Slot(chosen);
	attached_worker_id = chosen;
	my_attachment = mine;
	*worker_id = chosen;
	*attachment = mine;
	return attached_slot;
}

bool
DetachWorkerSlot(void)
{
	WorkerSlot *slot = attached_slot;

	if (slot == nullptr)
		return false;
	attached_slot = nullptr;

	pg_atomic_write_u32(&my_attachment->pid, 0);
	pg_atomic_fetch_add_u64(&slot->earlier_ids, pg_atomic_read_u64(&my_attachment->ids_issued));
	pg_atomic_write_u64(&my_attachment->ids_issued, 0);
	pg_atomic_write_u64(&slot->released_order,
						pg_atomic_add_fetch_u64(&attached_state->release_counter, 1));
	pg_atomic_fetch_sub_u32(&slot->sessions, 1);

	LOCKTAG		tag = SlotLockTag(attached_worker_id);

	/* pg_advisory_unlock_all() may have dropped it already. */
#if PG_VERSION_NUM >= 170000
	/* 17 added "orstronger"; only ShareLock itself is ours to release. */
	bool		held = LockHeldByMe(&tag, ShareLock, false);
#else
	bool		held = LockHeldByMe(&tag, ShareLock);
#endif

	if (held)
		LockRelease(&tag, ShareLock, true);
	return true;
}
