/*
 * registry_launcher.hpp
 *	  The "snowflake registry launcher": in automatic mode (snowflake.database
 *	  = ''), starts a node registry in every database that holds the
 *	  extension.
 */
#ifndef SNOWFLAKE_PG_REGISTRY_LAUNCHER_HPP
#define SNOWFLAKE_PG_REGISTRY_LAUNCHER_HPP

extern "C"
{
#include "postgres.h"
}

/* The launcher's entry point, registered by _PG_init in automatic mode. */
extern "C" PGDLLEXPORT void snowflake_registry_launcher_main(Datum arg);

#endif /* SNOWFLAKE_PG_REGISTRY_LAUNCHER_HPP */
