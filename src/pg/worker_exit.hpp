/*
 * How the extension's background workers stop: quietly, with exit code 0,
 * when the server shuts down, as PostgreSQL's own launchers do.
 */
#pragma once

extern "C"
{
#include "postgres.h"
}

/*
 * Installs SIGHUP (reload the configuration) and SIGTERM.  Call it before
 * BackgroundWorkerUnblockSignals().
 */
void InstallWorkerSignalHandlers(void);

/*
 * Waits on the latch for up to timeout_ms, as the worker's idle wait.  A
 * SIGTERM that came before or during it ends the worker here, without an
 * error (src/pg/README.md gives the exit codes).  Outside this wait SIGTERM
 * acts as die(), so that a worker never holds a shutdown or DROP DATABASE up.
 */
void WaitForWorkOrExit(long timeout_ms);

/*
 * The same wait, also for "socket_events" (WL_SOCKET_READABLE and the
 * like) on "socket": a network wait ends on SIGTERM as the idle one does.
 * Returns the events that occurred.
 */
int WaitForSocketOrExit(int socket_events, pgsocket socket, long timeout_ms);
