/*
 * The background workers' SIGTERM (src/pg/README.md).  Why not die() alone:
 * it ends a worker with "FATAL: terminating background worker ... due to
 * administrator command" and exit code 1 at every shutdown, which alerts
 * on FATAL catch.
 */
extern "C"
{
#include "postgres.h"

#include <signal.h>
#include <string.h>

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
}

#include "pg/worker_exit.hpp"

namespace {

volatile sig_atomic_t g_stop_requested = false;
volatile sig_atomic_t g_stop_by_postmaster = false;
volatile sig_atomic_t g_idle = false;

/*
 * The sender tells a shutdown from pg_terminate_backend(): the postmaster
 * signals its background workers with SIGTERM only when a smart or fast
 * shutdown stops them, or for TerminateBackgroundWorker() (not used here;
 * such a worker is not restarted whatever its exit code).  No role can set
 * si_pid; any role with pg_write_server_files can write postmaster.pid.
 */
void
HandleSigterm(int signo, siginfo_t *info, void *)
{
	int save_errno = errno;

	if (info != nullptr && info->si_pid == PostmasterPid)
		g_stop_by_postmaster = true;
	g_stop_requested = true;
	if (g_idle)
		SetLatch(MyLatch);
	else
		die(signo);
	errno = save_errno;
}

void
ExitOnRequest(void)
{
	/* A die() from a busy moment just before is answered here instead. */
	ProcDiePending = false;
	if (g_stop_by_postmaster)
	{
		ereport(DEBUG1, (errmsg_internal("%s shutting down", MyBgworkerEntry->bgw_type)));
		proc_exit(0);
	}
	/* Exit code 1: the postmaster starts a static worker again. */
	ereport(LOG,
			(errmsg("%s exits on SIGTERM", MyBgworkerEntry->bgw_type),
			 errdetail("The signal did not come from the postmaster, so the server is not "
					   "shutting down.")));
	proc_exit(1);
}

} /* namespace */

void
InstallWorkerSignalHandlers(void)
{
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	struct sigaction action;

	memset(&action, 0, sizeof(action));
	action.sa_sigaction = HandleSigterm;
	action.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&action.sa_mask);
	if (sigaction(SIGTERM, &action, nullptr) < 0)
		ereport(FATAL,
				(errcode(ERRCODE_SYSTEM_ERROR),
				 errmsg("could not install the SIGTERM handler of %s: %m",
						MyBgworkerEntry->bgw_type),
				 errdetail("sigaction() failed."),
				 errhint("The postmaster starts the worker again; see the system's limits "
						 "if this repeats.")));
}

int
WaitForSocketOrExit(int socket_events, pgsocket socket, long timeout_ms)
{
	g_idle = true;
	if (g_stop_requested)
		ExitOnRequest();

	int events = WaitLatchOrSocket(MyLatch,
								   WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH |
									   socket_events,
								   socket, timeout_ms, PG_WAIT_EXTENSION);

	g_idle = false;
	ResetLatch(MyLatch);
	if (g_stop_requested)
		ExitOnRequest();
	return events;
}

void
WaitForWorkOrExit(long timeout_ms)
{
	(void) WaitForSocketOrExit(0, PGINVALID_SOCKET, timeout_ms);
}
