/*
 * reservation_worker.hpp
 *	  The "snowflake reservation" background worker.
 *
 * Every kTickMs it
 *	- keeps the reservation snowflake.reserve_ahead past the newest ID any
 *	  slot issued (and past the clock while IDs were issued in the last
 *	  10 s), so generating sessions rarely extend it themselves, and writes
 *	  nothing once no IDs are issued;
 *	- compares the wall clock with the monotonic clock, and counts each
 *	  backward step of the wall clock of 1 ms or more in snowflake_status();
 *	- warns in the server log, at its start and then once a UTC day, while
 *	  the running layout has less than a year of timestamps left
 *	  (core/horizon.hpp).
 *
 * It runs on primaries only (from the end of recovery), with no database.
 */
#ifndef SNOWFLAKE_PG_RESERVATION_WORKER_HPP
#define SNOWFLAKE_PG_RESERVATION_WORKER_HPP

extern "C"
{
#include "postgres.h"
}

/* The worker's entry point, registered by _PG_init. */
extern "C" PGDLLEXPORT void snowflake_reservation_main(Datum arg);

#endif							/* SNOWFLAKE_PG_RESERVATION_WORKER_HPP */
