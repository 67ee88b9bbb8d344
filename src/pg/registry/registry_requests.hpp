/*
 * registry_requests.hpp
 *	  What the node registries learn from other sessions: a committed
 *	  CREATE or ALTER EXTENSION snowflake asks the launcher to probe that
 *	  database again, and DROP DATABASE stops the registry connected there.
 */
#ifndef SNOWFLAKE_PG_REGISTRY_REQUESTS_HPP
#define SNOWFLAKE_PG_REGISTRY_REQUESTS_HPP

/* Installs the object-access hook and the transaction callback; from _PG_init. */
void InstallRegistryRequestHooks(void);

#endif /* SNOWFLAKE_PG_REGISTRY_REQUESTS_HPP */
