/*
 * layout_file.hpp
 *	  The layout this data directory last ran with, checked at server start.
 *
 * snowflake_layout records layouts per database, but worker ids, and so
 * IDs, are unique per cluster: one database must not accept a layout that
 * would issue IDs below those another database already got.  So the server
 * also keeps the last layout it ran with in $PGDATA/snowflake.layout and
 * refuses to start with a layout that is not a provable successor of it.
 */
#ifndef SNOWFLAKE_PG_LAYOUT_FILE_HPP
#define SNOWFLAKE_PG_LAYOUT_FILE_HPP

#include "pg/data_directory.hpp"	/* kLayoutFileName */

/*
 * FATAL if the running layout may not replace the one recorded in the data
 * directory.  Called once, in the postmaster, after the settings were
 * validated.
 */
void		CheckLayoutOfDataDirectory(void);

/*
 * Records the running layout in the data directory if it is not recorded
 * yet: one of the first-ID records (pg/data_directory.hpp), once startup
 * has succeeded, before the first ID.  ERROR if the file cannot be written.
 */
void		RecordLayoutOfDataDirectory(void);

#endif							/* SNOWFLAKE_PG_LAYOUT_FILE_HPP */
