/*
 * shared_state.cpp
 *	  Requesting, creating and finding snowflake's shared memory, created
 *	  afresh at every postmaster start and crash restart.
 */
extern "C"
{
#include "postgres.h"

#include "miscadmin.h"		/* shmem_request_hook, MaxBackends, MaxConnections */
#include "port/atomics.h"
#include "storage/ipc.h"		/* shmem_startup_hook, RequestAddinShmemSpace */
#include "storage/lwlock.h"
#include "storage/shmem.h"
}

#include "core/layout.hpp"
#include "pg/clock.hpp"
#include "pg/settings.hpp"
#include "pg/shared_state.hpp"

static SharedState *shared_state = nullptr;

/* Where the attachments start: after the slots, on a cache line. */
static Size
AttachmentsOffset(void)
{
	return CACHELINEALIGN(add_size(offsetof(SharedState, slots),
								   mul_size(SessionWorkerIds(), sizeof(PaddedWorkerSlot))));
}

static Size
SharedStateSize(void)
{
	/* MaxBackends is known by the time shared memory is requested. */
	return add_size(AttachmentsOffset(),
					mul_size(MaxBackends, sizeof(PaddedSessionAttachment)));
}

void
RequestSharedState(void)
{
	RequestAddinShmemSpace(SharedStateSize());
	RequestNamedLWLockTranche(kSharedLockTrancheName, 1);

	/* Not a problem, but worth knowing when reading the IDs' worker ids. */
	if (SessionWorkerIds() < static_cast<uint32>(MaxConnections))
		ereport(
			LOG,
			(g_settings.lease_workers == 0 ?
				 errmsg("snowflake.worker_bits = %d gives %u worker slots, fewer than "
						"max_connections (%d)",
						g_settings.layout.worker_bits, SessionWorkerIds(), MaxConnections) :
				 errmsg(
					 "snowflake.worker_bits = %d with snowflake.lease_workers = %d "
					 "leaves %u worker slots to sessions, fewer than max_connections (%d)",
					 g_settings.layout.worker_bits, g_settings.lease_workers,
					 SessionWorkerIds(), MaxConnections),
			 errdetail("Sessions beyond the slot count share slots, and with them "
					   "the %u IDs per millisecond of a slot.",
					   g_settings.layout.MaxSequence() + 1)));
}

static void
InitSlots(SharedState *state)
{
	for (uint32 worker_id = 0; worker_id < state->slot_count; worker_id++)
	{
		WorkerSlot *slot = state->Slot(worker_id);

		/* last_id 0: nothing issued; the floor bounds the first session. */
		memset(slot, 0, sizeof(PaddedWorkerSlot));
		pg_atomic_init_u64(&slot->last_id, 0);
		pg_atomic_init_u32(&slot->sessions, 0);
		pg_atomic_init_u64(&slot->released_order, 0);
		pg_atomic_init_u64(&slot->earlier_ids, 0);
		pg_atomic_init_u64(&slot->overflow_waits, 0);
	}
	for (uint32 i = 0; i < state->attachment_count; i++)
	{
		SessionAttachment *attachment = state->Attachment(i);

		memset(attachment, 0, sizeof(PaddedSessionAttachment));
		pg_atomic_init_u32(&attachment->pid, 0);
		pg_atomic_init_u64(&attachment->ids_issued, 0);
	}
}

void
StartSharedState(SharedStateInitializer initialize_subsystems)
{
	bool		found;

	/* After a crash restart, the old pointer refers to discarded memory. */
	shared_state = nullptr;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	SharedState *state = static_cast<SharedState *>(
		ShmemInitStruct("snowflake", SharedStateSize(), &found));

	if (!found)
	{
		state->started_unix_ms = NowUnixMs();
		pg_atomic_init_u64(&state->release_counter, 0);
		state->slot_count = SessionWorkerIds();	/* none for the lease space */
		state->attachment_count = static_cast<uint32>(MaxBackends);
		state->attachments_offset = AttachmentsOffset();
		InitSlots(state);
		initialize_subsystems(state);
	}
	LWLockRelease(AddinShmemInitLock);
	shared_state = state;
}

int64
NewestIssuedTimestamp(SharedState *state)
{
	int64		newest = -1;

	for (uint32 worker_id = 0; worker_id < state->slot_count; worker_id++)
	{
		int64		last_id = static_cast<int64>(
			pg_atomic_read_u64(&state->Slot(worker_id)->last_id));

		if (last_id != 0)
			newest = Max(newest, snowflake::Decompose(g_settings.layout, last_id).timestamp);
	}
	return newest;
}

SharedState *
SharedStateIfAttached(void)
{
	return shared_state;
}

SharedState *
RequireSharedState(void)
{
	if (unlikely(shared_state == nullptr))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("snowflake must be loaded via shared_preload_libraries"),
				 errhint("Add snowflake to shared_preload_libraries in postgresql.conf "
						 "and restart the server.")));
	return shared_state;
}
