/*
 * replication_check.hpp
 *	  Whether this database's logical replication still carries
 *	  snowflake_nodes, once it did.
 *
 * The registry sees other instances only through replication of
 * snowflake_nodes.  Roles other than a superuser can cut it without a word:
 * the owner of a publication drops the table from it, a subscription
 * refreshed after its publisher stopped publishing it, the owner of the
 * extension's schema renames that schema (logical replication maps rows by
 * qualified name, so the peers' heartbeats then land elsewhere).  Each
 * round the registry remembers which publications and subscriptions of
 * PostgreSQL's own logical replication carry the table, and under which
 * qualified name, and reports one that no longer does, or a new name.
 * A publication or subscription that is dropped is forgotten: dropping is
 * a decision, not a cut.  pglogical's replication sets are not checked.
 *
 * Catalog reads by OID only (no name is resolved); errors by longjmp.
 */
#ifndef SNOWFLAKE_PG_REGISTRY_REPLICATION_CHECK_HPP
#define SNOWFLAKE_PG_REGISTRY_REPLICATION_CHECK_HPP

extern "C"
{
#include "postgres.h"

#include "utils/rel.h"
}

/*
 * Returns NULL while replication carries "nodes" as it did, or the problem
 * (valid until the next call) with its fix in *hint.  Call inside a
 * transaction.
 */
const char *CheckNodesReplication(Relation nodes, const char **hint);

#endif
