/*
 * history_guard.hpp
 *	  Keeps a non-superuser from dropping the extension, and with it the
 *	  layout history that decodes a database's existing IDs.
 */
#ifndef SNOWFLAKE_PG_LAYOUT_HISTORY_GUARD_HPP
#define SNOWFLAKE_PG_LAYOUT_HISTORY_GUARD_HPP

/* Installs the object-access hook; _PG_init. */
void		InstallLayoutHistoryGuard(void);

#endif							/* SNOWFLAKE_PG_LAYOUT_HISTORY_GUARD_HPP */
