/*
 * lease_expansion.hpp
 *	  Refusing a column selected from a call of snowflake_lease_worker().
 */
#ifndef SNOWFLAKE_PG_LEASES_LEASE_EXPANSION_HPP
#define SNOWFLAKE_PG_LEASES_LEASE_EXPANSION_HPP

extern "C"
{
#include "postgres.h"

#include "nodes/parsenodes.h"
#include "parser/parse_node.h"
}

/*
 * ERROR if "query" (any level of it) selects a column of an expression
 * that calls snowflake_lease_worker(), as (f()).* and (f()).token do.
 * "pstate" places the error in the statement; nullptr (from the planner)
 * places none.
 */
void		RefuseLeaseFieldSelection(ParseState *pstate, Query *query);

/* The same for a stored column default and a domain's (evaluated without a plan). */
void		RefuseLeaseFieldSelectionInDefault(Oid relid, int attnum);
void		RefuseLeaseFieldSelectionInDomainDefault(Oid typid);

#endif							/* SNOWFLAKE_PG_LEASES_LEASE_EXPANSION_HPP */
