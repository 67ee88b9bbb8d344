/*
 * module.cpp
 *	  Entry point of the snowflake library.
 *
 * snowflake must be listed in shared_preload_libraries: its settings are
 * read at server start and its worker slots live in shared memory.  Loaded
 * any other way, it defines nothing, and every function reports how to
 * preload it.
 *
 * At server start it validates the settings, checks the layout against the
 * one the data directory last ran with, registers its WAL resource manager
 * and background workers, and requests its shared memory.
 */
#include "postgres_headers.hpp"

#include "layout_file.hpp"
#include "node_registry.hpp"
#include "reservation_wal.hpp"
#include "reservation_worker.hpp"
#include "settings.hpp"
#include "shared_state.hpp"

#if PG_VERSION_NUM < 150000
#error "snowflake needs PostgreSQL 15 or later (it uses shmem_request_hook)"
#endif

extern "C"
{
PG_MODULE_MAGIC;

PGDLLEXPORT void _PG_init(void);
}

void
_PG_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;
	DefineSettings();
	CheckLayoutOfDataDirectory();
	RegisterReservationRmgr();
	RegisterReservationWorker();
	RegisterNodeRegistryWorker();
	InstallSharedStateHooks();
}
