/*
 * worker_slot.cpp
 *	  Worker-slot claims: least recently used first, bounded wait, release
 *	  on every exit path.
 *
 * Release paths: snowflake_release_worker(), and a before_shmem_exit
 * callback that runs on normal exit, FATAL and pg_terminate_backend.  A
 * backend that dies without running it (kill -9, a crash) makes the
 * postmaster reinitialise shared memory, which frees every slot.
 */
#include "postgres_headers.hpp"

#include "settings.hpp"
#include "worker_slot.hpp"

static SharedState *held_state = nullptr;
static WorkerSlot *held_slot = nullptr;
static uint32 held_worker_id = 0;
static bool exit_callback_registered = false;

/* How often a session that found no free slot looks again. */
static constexpr long kClaimRetryMs = 10;

static LOCKTAG
SlotLockTag(uint32 worker_id)
{
	LOCKTAG		tag;

	/* Database 0: a slot is unique in the whole cluster, not per database. */
	SET_LOCKTAG_ADVISORY(tag, InvalidOid, kSlotLockClass, worker_id, 2);
	return tag;
}

static void
ReleaseAtExit(int code, Datum arg)
{
	(void) code;
	(void) arg;
	ReleaseHeldSlot();
}

/*
 * Orders the free slots least recently released first, so a just-freed id is
 * handed out last (ShardingSphere #190).  Never-used slots come first, by id.
 */
static int
CompareSlotAge(const void *a, const void *b, void *arg)
{
	SharedState *state = static_cast<SharedState *>(arg);
	uint32		ia = *static_cast<const uint32 *>(a);
	uint32		ib = *static_cast<const uint32 *>(b);
	uint64		oa = state->Slot(ia)->released_order;
	uint64		ob = state->Slot(ib)->released_order;

	if (oa != ob)
		return oa < ob ? -1 : 1;
	return ia < ib ? -1 : (ia > ib ? 1 : 0);
}

/*
 * Tries to take one slot: its lock first, then its owner field.  The owner
 * check catches a live holder whose lock was dropped by
 * pg_advisory_unlock_all().
 */
static bool
TryTakeSlot(SharedState *state, uint32 worker_id)
{
	LOCKTAG		tag = SlotLockTag(worker_id);
	uint32		expected = 0;

	LockAcquireResult acquired = LockAcquire(&tag, ExclusiveLock, true, true);

	if (acquired == LOCKACQUIRE_NOT_AVAIL)
		return false;
	/* Held already (never expected): drop the extra reference just taken. */
	if (acquired != LOCKACQUIRE_OK)
		LockRelease(&tag, ExclusiveLock, true);
	if (!pg_atomic_compare_exchange_u32(&state->Slot(worker_id)->owner_pid,
										&expected, static_cast<uint32>(MyProcPid)))
	{
		LockRelease(&tag, ExclusiveLock, true);
		return false;
	}
	return true;
}

/* One pass over the free slots.  Returns the worker id taken, or -1. */
static int64
TryClaimOnce(SharedState *state, uint32 *candidates)
{
	uint32		count = 0;

	for (uint32 worker_id = 0; worker_id < state->slot_count; worker_id++)
		if (pg_atomic_read_u32(&state->Slot(worker_id)->owner_pid) == 0)
			candidates[count++] = worker_id;
	qsort_arg(candidates, count, sizeof(uint32), CompareSlotAge, state);

	for (uint32 i = 0; i < count; i++)
		if (TryTakeSlot(state, candidates[i]))
			return candidates[i];
	return -1;
}

WorkerSlot *
ClaimWorkerSlot(SharedState *state, uint32 *worker_id)
{
	uint32	   *candidates = static_cast<uint32 *>(
		palloc(sizeof(uint32) * state->slot_count));
	TimestampTz start = GetCurrentTimestamp();
	int64		taken;

	Assert(held_slot == nullptr);
	if (!exit_callback_registered)
	{
		before_shmem_exit(ReleaseAtExit, 0);
		exit_callback_registered = true;
	}

	while ((taken = TryClaimOnce(state, candidates)) < 0)
	{
		if (TimestampDifferenceExceeds(start, GetCurrentTimestamp(),
									   g_settings.claim_timeout_ms))
			ereport(ERROR,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("all %u snowflake worker slots are in use", state->slot_count),
					 errdetail("Waited %d ms for a session to release one.",
							   g_settings.claim_timeout_ms),
					 errhint("Raise snowflake.worker_bits or snowflake.claim_timeout, or "
							 "end sessions that called snowflake_nextval().")));
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 kClaimRetryMs, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	pfree(candidates);

	WorkerSlot *slot = state->Slot(static_cast<uint32>(taken));

	/* The CAS was a full barrier: the previous holder's final mark is visible. */
	slot->database_id = MyDatabaseId;
	slot->user_id = GetUserId();
	slot->claimed_at = GetCurrentTimestamp();
	held_state = state;
	held_slot = slot;
	held_worker_id = static_cast<uint32>(taken);
	*worker_id = held_worker_id;
	return slot;
}

bool
ReleaseHeldSlot(void)
{
	WorkerSlot *slot = held_slot;

	if (slot == nullptr)
		return false;
	held_slot = nullptr;

	pg_atomic_add_fetch_u64(&slot->earlier_ids, pg_atomic_read_u64(&slot->holder_ids));
	pg_atomic_write_u64(&slot->holder_ids, 0);
	slot->released_order = pg_atomic_add_fetch_u64(&held_state->release_counter, 1);
	/* The next holder must see the final mark and counters before the slot. */
	pg_write_barrier();
	pg_atomic_write_u32(&slot->owner_pid, 0);

	LOCKTAG		tag = SlotLockTag(held_worker_id);

	if (LockHeldByMe(&tag, ExclusiveLock))
		LockRelease(&tag, ExclusiveLock, true);
	return true;
}
