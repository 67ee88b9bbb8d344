/*
 * timestamp_rewrite.hpp
 *	  Serving comparisons of snowflake_timestamp(id) with ranges of id,
 *	  for the planner hook.
 */
#ifndef SNOWFLAKE_PG_PLANNER_TIMESTAMP_REWRITE_HPP
#define SNOWFLAKE_PG_PLANNER_TIMESTAMP_REWRITE_HPP

extern "C"
{
#include "postgres.h"

#include "nodes/parsenodes.h"
}

/* Rewrites the comparisons of "parse", in place, before standard_planner. */
void		RewriteTimestampComparisons(Query *parse);

#endif							/* SNOWFLAKE_PG_PLANNER_TIMESTAMP_REWRITE_HPP */
