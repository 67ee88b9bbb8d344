/*
 * nextval.hpp
 *	  The session's ID generator, for the SQL functions that issue IDs.
 */
#ifndef SNOWFLAKE_PG_NEXTVAL_HPP
#define SNOWFLAKE_PG_NEXTVAL_HPP

#include "postgres_headers.hpp"

/*
 * The session's next ID, exactly as snowflake_nextval() issues it.
 * "fn_oid" is any function of the extension (it locates the extension's
 * tables for the first call's checks).
 */
int64		NextSessionId(Oid fn_oid);

#endif							/* SNOWFLAKE_PG_NEXTVAL_HPP */
