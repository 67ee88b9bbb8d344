/*
 * extension_functions.hpp
 *	  The extension's functions in the current database, by OID, for the
 *	  planner hook.
 */
#ifndef SNOWFLAKE_PG_PLANNER_EXTENSION_FUNCTIONS_HPP
#define SNOWFLAKE_PG_PLANNER_EXTENSION_FUNCTIONS_HPP

extern "C"
{
#include "postgres.h"
}

/* B-tree strategies 1..5, as the index of the recheck functions. */
constexpr int kStrategyCount = 5;

struct ExtensionFunctions
{
	Oid			timestamp;		/* snowflake_timestamp(bigint) */
	Oid			decode;			/* snowflake_decode(bigint) */
	Oid			lower_id;		/* snowflake_timestamp_lower_id(timestamptz, boolean) */
	Oid			upper_id;		/* snowflake_timestamp_upper_id(timestamptz, boolean) */
	Oid			recheck[kStrategyCount + 1];	/* by strategy; [0] unused */
	Oid			timestamptz_family;	/* B-tree family of timestamptz */
	Oid			int8_ge;		/* bigint >= bigint */
	Oid			int8_le;		/* bigint <= bigint */
};

/*
 * The functions of the extension as installed in this database, or nullptr
 * when it is not installed here, or at a version without the rewrite's
 * functions.  Cached until a function or the extension changes.
 */
const ExtensionFunctions *CurrentExtensionFunctions(void);

/*
 * Whether CurrentExtensionFunctions() would answer from its cache, without
 * reading a catalog.
 */
bool		ExtensionFunctionsKnown(void);

#endif							/* SNOWFLAKE_PG_PLANNER_EXTENSION_FUNCTIONS_HPP */
