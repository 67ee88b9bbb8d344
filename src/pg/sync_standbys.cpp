/*
 * sync_standbys.cpp
 *	  Waiting for the synchronous standbys, decided for the whole server.
 */
extern "C"
{
#include "postgres.h"

#include "miscadmin.h"		/* MyLatch, CHECK_FOR_INTERRUPTS */
#include "replication/syncrep.h"
#include "replication/walsender_private.h"	/* WalSndCtl: what synchronous standbys confirmed */
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "utils/wait_event.h"
}

#include "pg/sync_standbys.hpp"

/*
 * As the checkpointer last published it for the whole server (a waiting
 * process cannot reload its own copy); before it has, this process's own.
 */
bool
SynchronousStandbysDefined(void)
{
	bool		defined;

	LWLockAcquire(SyncRepLock, LW_SHARED);
#ifdef SYNC_STANDBY_DEFINED
	if (WalSndCtl->sync_standbys_status & SYNC_STANDBY_INIT)
		defined = (WalSndCtl->sync_standbys_status & SYNC_STANDBY_DEFINED) != 0;
	else
		defined = SyncRepStandbyNames != nullptr && SyncRepStandbyNames[0] != '\0';
#else
	defined = WalSndCtl->sync_standbys_defined;
#endif
	LWLockRelease(SyncRepLock);
	return defined;
}

/*
 * So that a standby promoted in a failover knows every reservation an ID
 * used, and every lease a client was shown.  Never by the calling
 * session's synchronous_commit: a session that turned it off must not
 * publish a reservation for every session, nor weaken a lease another
 * client relies on.  So not SyncRepWaitForLSN(), which follows that
 * setting: the wait polls the position the standbys confirmed, with a
 * growing pause (the walsenders wake only queued waiters).
 */
void
WaitForSynchronousStandbys(XLogRecPtr lsn)
{
	long		pause_ms = 1;

	for (;;)
	{
		if (!SynchronousStandbysDefined())
			return;

		LWLockAcquire(SyncRepLock, LW_SHARED);
		XLogRecPtr	confirmed = WalSndCtl->lsn[SYNC_REP_WAIT_FLUSH];

		LWLockRelease(SyncRepLock);
		if (confirmed >= lsn)
			return;

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 pause_ms, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		pause_ms = Min(pause_ms * 2, 100);
	}
}
