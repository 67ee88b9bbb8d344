/*
 * nextval.hpp
 *	  The session's ID generator, for the SQL functions that issue IDs.
 */
#ifndef SNOWFLAKE_PG_NEXTVAL_HPP
#define SNOWFLAKE_PG_NEXTVAL_HPP

extern "C"
{
#include "postgres.h"
}

/*
 * The session's next IDs, exactly as snowflake_nextval() issues them: up
 * to "want" (at least 1) consecutive IDs of one millisecond, of which the
 * first is returned and *count says how many.  "fn_oid" is any function of
 * the extension (it locates the extension's tables for the first call's
 * checks).
 */
int64		NextSessionRun(Oid fn_oid, uint32 want, uint32 *count);

/* The last ID this session took (the end of its last run); 0 if none. */
int64		SessionLastId(void);

#endif							/* SNOWFLAKE_PG_NEXTVAL_HPP */
