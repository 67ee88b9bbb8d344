/*
 * settings.hpp
 *	  The snowflake.* configuration settings and the layout they describe.
 *
 * Every setting that shapes IDs is PGC_POSTMASTER: it is read once at server
 * start, validated as a whole, and turned into the Layout all backends use.
 */
#ifndef SNOWFLAKE_PG_SETTINGS_HPP
#define SNOWFLAKE_PG_SETTINGS_HPP

#include "../core/layout.hpp"

/* Upper bound of snowflake.max_drift; also bounds drift from an older run. */
constexpr int kMaxDriftLimitMs = 60000;

struct Settings
{
	snowflake::Layout layout;	/* valid once DefineSettings() returned */
	int			node_id;
	int			max_drift_ms;
	int			claim_timeout_ms;	/* changeable per session */
};

extern Settings g_settings;

/*
 * Defines the settings and refuses (FATAL) a combination that cannot work.
 * Call only while shared_preload_libraries is being processed.
 */
void		DefineSettings(void);

#endif							/* SNOWFLAKE_PG_SETTINGS_HPP */
