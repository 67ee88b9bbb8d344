/*
 * pure.hpp
 *	  Included first by every file of the core, to keep it free of
 *	  PostgreSQL.  The core must build and run in the unit test without a
 *	  server, so a PostgreSQL header in a core translation unit is an error.
 */
#ifndef SNOWFLAKE_CORE_PURE_HPP
#define SNOWFLAKE_CORE_PURE_HPP

#ifdef POSTGRES_H
#error "src/core must not include PostgreSQL headers"
#endif

#endif							/* SNOWFLAKE_CORE_PURE_HPP */
