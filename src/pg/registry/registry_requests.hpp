/*
 * registry_requests.hpp
 *	  What the node registries learn from other sessions: a committed
 *	  CREATE or ALTER EXTENSION snowflake asks the launcher to probe that
 *	  database again, and DROP DATABASE stops the registry connected there.
 */
#ifndef SNOWFLAKE_PG_REGISTRY_REQUESTS_HPP
#define SNOWFLAKE_PG_REGISTRY_REQUESTS_HPP

extern "C"
{
#include "postgres.h"

#include "catalog/objectaccess.h"
}

/* Its part of the object-access hook, which module.cpp installs. */
void NoteRegistryObjectAccess(ObjectAccessType access, Oid class_id, Oid object_id);

/* Registers the transaction callback; from _PG_init. */
void RegisterRegistryTransactionCallback(void);

#endif /* SNOWFLAKE_PG_REGISTRY_REQUESTS_HPP */
