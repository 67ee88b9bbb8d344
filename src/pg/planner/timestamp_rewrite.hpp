/*
 * timestamp_rewrite.hpp
 *	  The planner hook that serves comparisons of snowflake_timestamp(id)
 *	  with ranges of id.
 */
#ifndef SNOWFLAKE_PG_PLANNER_TIMESTAMP_REWRITE_HPP
#define SNOWFLAKE_PG_PLANNER_TIMESTAMP_REWRITE_HPP

/* Called once, from _PG_init in the postmaster. */
void		InstallTimestampRewrite(void);

#endif							/* SNOWFLAKE_PG_PLANNER_TIMESTAMP_REWRITE_HPP */
