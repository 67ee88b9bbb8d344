/*
 * history_guard.hpp
 *	  Keeps a non-superuser from dropping the extension, and with it the
 *	  layout history that decodes a database's existing IDs.
 */
#ifndef SNOWFLAKE_PG_LAYOUT_HISTORY_GUARD_HPP
#define SNOWFLAKE_PG_LAYOUT_HISTORY_GUARD_HPP

extern "C"
{
#include "postgres.h"

#include "catalog/objectaccess.h"
}

/* Its part of the object-access hook, which module.cpp installs. */
void		GuardLayoutHistoryOnAccess(ObjectAccessType access, Oid class_id, Oid object_id);

#endif							/* SNOWFLAKE_PG_LAYOUT_HISTORY_GUARD_HPP */
