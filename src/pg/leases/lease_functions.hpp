/*
 * lease_functions.hpp
 *	  What the lease SQL functions of lease_functions.cpp (the live API) and
 *	  lease_v14.cpp (version 1.4's afterlife) share.
 */
#ifndef SNOWFLAKE_PG_LEASE_FUNCTIONS_HPP
#define SNOWFLAKE_PG_LEASE_FUNCTIONS_HPP

#include "pg/leases/lease_table.hpp"

/*
 * Leases change only on a primary (a standby's table is a replica), and
 * only in the caller's own backend: a parallel worker reached through a
 * wrapper mislabelled PARALLEL SAFE would take a connection-scoped lease
 * for its own connection, which ends with the query.  "caller" names the
 * function (or command) for the messages.
 */
void		RefuseOutsidePrimaryBackend(const char *caller);

/* The layout and node this server issues under, as an image records them. */
void		SetLeaseImageLayout(LeaseImage *image);

/* Copies "text" into "out" ("size" bytes), cut at a character boundary. */
void		CopyClippedText(char *out, size_t size, const char *text);

#endif							/* SNOWFLAKE_PG_LEASE_FUNCTIONS_HPP */
