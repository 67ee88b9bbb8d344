/*
 * reservation_worker.hpp
 *	  The "snowflake reservation" background worker (README.md): with no
 *	  database; on a standby it only observes the clock until promotion.
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
