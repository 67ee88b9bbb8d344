/*
 * settings.cpp
 *	  Definition and whole-layout validation of the snowflake.* settings.
 */
extern "C"
{
#include "postgres.h"

#include "utils/guc.h"
#include "utils/guc_tables.h"	/* to list the placeholders of misspelt settings */
}

#include "core/epoch.hpp"
#include "pg/clock.hpp"
#include "pg/settings.hpp"

Settings	g_settings;

/* GUC targets must outlive _PG_init: the GUC machinery reads them later. */
static char *epoch_text = nullptr;
static int	node_bits = 3;
static int	worker_bits = 7;
static int	sequence_bits = 12;

static const struct config_enum_entry clock_behind_policies[] = {
	{"wait", kClockBehindWait, false},
	{"ride", kClockBehindRide, false},
	{nullptr, 0, false},
};

static const struct config_enum_entry clock_skew_policies[] = {
	{"warn", kClockSkewWarn, false},
	{"refuse", kClockSkewRefuse, false},
	{nullptr, 0, false},
};

static const struct config_enum_entry collision_policies[] = {
	{"warn", kCollisionWarn, false},
	{"error", kCollisionError, false},
	{nullptr, 0, false},
};

/*
 * A combination of settings that cannot work stops the server.  A macro,
 * so that each message is a literal format, as translation needs.
 */
#define REFUSE_SETTING(...) \
	ereport(FATAL, \
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE), __VA_ARGS__, \
			 errhint("Change the setting in postgresql.conf and start the server " \
					 "again.")))

static void
ValidateWidths(const snowflake::Layout &layout)
{
	switch (snowflake::CheckWidths(layout))
	{
		case snowflake::WidthProblem::kOk:
			return;
		case snowflake::WidthProblem::kNegativeWidth:
		case snowflake::WidthProblem::kNoSequenceBits:
			REFUSE_SETTING(errmsg("snowflake.sequence_bits must be at least 1"));
			return;
		case snowflake::WidthProblem::kTimestampTooNarrow:
			REFUSE_SETTING(
				errmsg("snowflake.node_bits (%d) + snowflake.worker_bits (%d) + "
					   "snowflake.sequence_bits (%d) leave %d bits for the timestamp",
					   layout.node_bits, layout.worker_bits, layout.sequence_bits,
					   layout.TimestampBits()),
				errdetail("A snowflake ID has 63 usable bits and the timestamp "
						  "needs at least %d of them.",
						  snowflake::kMinTimestampBits));
			return;
	}
}

static void
ValidateEpoch(const snowflake::Layout &layout)
{
	switch (snowflake::CheckEpoch(layout, NowUnixMs()))
	{
		case snowflake::EpochProblem::kOk:
			return;
		case snowflake::EpochProblem::kInFuture:
			REFUSE_SETTING(errmsg("snowflake.epoch \"%s\" is in the future", epoch_text));
			return;
		case snowflake::EpochProblem::kExhausted:
			REFUSE_SETTING(
				errmsg("snowflake.epoch \"%s\" is too far in the past for "
					   "%d timestamp bits",
					   epoch_text, layout.TimestampBits()),
				errdetail("Every timestamp this layout can express lies in the past."));
			return;
	}
}

namespace {

/* An integer setting and the values it accepts. */
struct IntSetting
{
	const char *name;
	const char *description;
	int		   *target;
	int			boot;
	int			min;
	int			max;
	GucContext	context;
	int			flags;
	const char *raw = nullptr;	/* as postgresql.conf or the command line set it */
};

IntSetting int_settings[] = {
	{"snowflake.node_bits", gettext_noop("Bits of each ID that hold the node id."),
	 &node_bits, 3, 0, 16, PGC_POSTMASTER, 0},
	{"snowflake.worker_bits", gettext_noop("Bits of each ID that hold the worker id."),
	 &worker_bits, 7, 0, 16, PGC_POSTMASTER, 0},
	{"snowflake.sequence_bits",
	 gettext_noop("Bits of each ID that count IDs within one millisecond."), &sequence_bits,
	 12, 1, 24, PGC_POSTMASTER, 0},
	{"snowflake.node_id", gettext_noop("Node id of this server, unique among primaries."),
	 &g_settings.node_id, 0, 0, 65535, PGC_POSTMASTER, 0},
	{"snowflake.max_drift",
	 gettext_noop("How far ID timestamps may run ahead of the wall clock."),
	 &g_settings.max_drift_ms, 1000, 0, kMaxDriftLimitMs, PGC_POSTMASTER, GUC_UNIT_MS},
	{"snowflake.reserve_ahead",
	 gettext_noop("How far the durable reservation runs ahead of the newest ID."),
	 &g_settings.reserve_ahead_ms, 1000, 10, kMaxReserveAheadMs, PGC_SIGHUP, GUC_UNIT_MS},
	{"snowflake.clock_wait_timeout",
	 gettext_noop("How long a session waits for the clock to come within "
				  "snowflake.max_drift of the next ID."),
	 &g_settings.clock_wait_timeout_ms, 10000, 0, 3600000, PGC_USERSET, GUC_UNIT_MS},
	{"snowflake.registry_interval",
	 gettext_noop("How often this node heartbeats in snowflake_nodes and looks "
				  "for another running instance with its node_id."),
	 &g_settings.registry_interval_ms, 10000, 100, 3600000, PGC_SIGHUP, GUC_UNIT_MS},
	{"snowflake.lease_workers",
	 gettext_noop("How many worker ids, the highest ones, are leased to "
				  "application-side generators instead of sessions."),
	 &g_settings.lease_workers, 0, 0, 65535, PGC_POSTMASTER, 0},
	{"snowflake.lease_clock_tolerance",
	 gettext_noop("How far a leasing client's clock may be from the database's."),
	 &g_settings.lease_clock_tolerance_ms, 1000, 0, 3600000, PGC_SIGHUP, GUC_UNIT_MS},
	{"snowflake.lease_connection_window",
	 gettext_noop("How far past its last renewal the holder of a connection-scoped "
				  "lease may issue IDs."),
	 &g_settings.lease_connection_window_ms, 10000, 1000, kMaxLeaseWindowMs, PGC_SIGHUP,
	 GUC_UNIT_MS},
	{"snowflake.clock_step_threshold",
	 gettext_noop("How far the wall clock must step forward, against the boot-time "
				  "clock, to count as a step."),
	 &g_settings.clock_step_threshold_ms, 1000, 100, 3600000, PGC_SIGHUP, GUC_UNIT_MS},
	{"snowflake.clock_step_confirmation",
	 gettext_noop("How long a forward step of the wall clock must last before IDs "
				  "follow it."),
	 &g_settings.clock_step_confirmation_ms, 600000, 1000, 86400000, PGC_SIGHUP,
	 GUC_UNIT_MS},
	{"snowflake.clock_skew_threshold",
	 gettext_noop("How far this node's clock may disagree with another running "
				  "node's, as their registry heartbeats show, before it is reported."),
	 &g_settings.clock_skew_threshold_ms, 1000, 100, 86400000, PGC_SIGHUP, GUC_UNIT_MS},
};

const char *collision_policy_raw = nullptr;

/*
 * The value postgresql.conf (or the command line) gave a setting, read
 * before the setting is defined: until then it is a placeholder holding the
 * text as written.
 */
const char *
RawValue(const char *name)
{
	const char *value = GetConfigOption(name, true, false);

	return value ? pstrdup(value) : nullptr;
}

/*
 * Refuses a value the GUC machinery would have replaced by the default with
 * only a WARNING: for a node id or a width, a typo would otherwise make two
 * primaries issue the same IDs.
 */
void
CheckIntSetting(const IntSetting &setting)
{
	int			value;
	const char *unit = (setting.flags & GUC_UNIT_MS) ? " ms" : "";

	if (setting.raw == nullptr)
		return;
	if (parse_int(setting.raw, &value, setting.flags, nullptr) &&
		value >= setting.min && value <= setting.max)
		return;
	ereport(FATAL,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid value for parameter \"%s\": \"%s\"", setting.name, setting.raw),
			 errdetail("%s must be an integer from %d%s to %d%s.",
					   setting.name, setting.min, unit, setting.max, unit),
			 errhint("Correct the setting in postgresql.conf and start the server again.")));
}

void
CheckCollisionPolicy(void)
{
	if (collision_policy_raw == nullptr)
		return;
	for (const config_enum_entry *entry = collision_policies; entry->name; entry++)
		if (pg_strcasecmp(collision_policy_raw, entry->name) == 0)
			return;
	ereport(FATAL,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid value for parameter \"snowflake.on_node_collision\": \"%s\"",
					collision_policy_raw),
			 errdetail("snowflake.on_node_collision must be \"warn\" or \"error\"."),
			 errhint("Correct the setting in postgresql.conf and start the server again.")));
}

/*
 * Refuses a snowflake.* setting that is not one of ours (say, a misspelt
 * one): once defined, ours are no longer placeholders.
 */
void
RefuseUnknownSettings(void)
{
#if PG_VERSION_NUM >= 160000
	int			count;
	struct config_generic **variables = get_guc_variables(&count);
#else
	int			count = GetNumConfigOptions();
	struct config_generic **variables = get_guc_variables();
#endif

	for (int i = 0; i < count; i++)
	{
		const struct config_generic *variable = variables[i];

		if ((variable->flags & GUC_CUSTOM_PLACEHOLDER) &&
			strncmp(variable->name, "snowflake.", strlen("snowflake.")) == 0)
			ereport(FATAL,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("unrecognized configuration parameter \"%s\"", variable->name),
					 errdetail("\"snowflake.\" is the prefix of the snowflake extension, "
							   "which has no such setting."),
					 errhint("Correct the name in postgresql.conf and start the server "
							 "again; the snowflake documentation lists the settings.")));
	}
}

}							/* namespace */

void
DefineSettings(void)
{
	for (IntSetting &setting : int_settings)
		setting.raw = RawValue(setting.name);
	collision_policy_raw = RawValue("snowflake.on_node_collision");

	DefineCustomStringVariable("snowflake.epoch",
							   gettext_noop("Start of the ID timestamp (UTC), as "
											"YYYY-MM-DD[ HH:MM[:SS[.fff]]]."),
							   nullptr, &epoch_text, "2025-01-01",
							   PGC_POSTMASTER, 0, nullptr, nullptr, nullptr);
	for (const IntSetting &setting : int_settings)
		DefineCustomIntVariable(setting.name, setting.description, nullptr, setting.target,
								setting.boot, setting.min, setting.max, setting.context,
								setting.flags, nullptr, nullptr, nullptr);
	DefineCustomStringVariable("snowflake.database",
							   gettext_noop(
								   "Database whose snowflake_nodes table registers "
								   "this node."),
							   gettext_noop("Empty: every database where the extension is "
											"installed."),
							   &g_settings.registry_database, "", PGC_POSTMASTER, 0,
							   nullptr, nullptr, nullptr);
	DefineCustomEnumVariable("snowflake.on_node_collision",
							 gettext_noop("What to do when another running instance uses "
										  "this node_id."),
							 nullptr, &g_settings.on_node_collision, kCollisionWarn,
							 collision_policies, PGC_SIGHUP, 0, nullptr, nullptr, nullptr);
	DefineCustomEnumVariable("snowflake.on_clock_behind",
							 gettext_noop("What snowflake_nextval() does when the next ID "
										  "lies more than snowflake.max_drift ahead of "
										  "the clock: wait for the clock, or ride it out."),
							 nullptr, &g_settings.on_clock_behind, kClockBehindWait,
							 clock_behind_policies, PGC_SIGHUP, 0, nullptr, nullptr,
							 nullptr);
	DefineCustomEnumVariable("snowflake.on_clock_skew",
							 gettext_noop("What snowflake_nextval() does while this node's "
										  "clock disagrees with most of its peers' by more "
										  "than snowflake.clock_skew_threshold: warn, or "
										  "refuse IDs."),
							 nullptr, &g_settings.on_clock_skew, kClockSkewWarn,
							 clock_skew_policies, PGC_SIGHUP, 0, nullptr, nullptr, nullptr);
	DefineCustomBoolVariable("snowflake.allow_connection_leases",
							 gettext_noop("Whether snowflake_lease_worker() grants "
										  "leases held as long as the connection."),
							 gettext_noop("Turn it off behind a transaction-mode "
										  "connection pooler, where a connection is not "
										  "a client."),
							 &g_settings.allow_connection_leases, true, PGC_SIGHUP, 0,
							 nullptr, nullptr, nullptr);
	DefineCustomBoolVariable("snowflake.rewrite_timestamp_comparisons",
							 gettext_noop("Plans comparisons of snowflake_timestamp(id) as "
										  "ranges of id."),
							 gettext_noop(
								 "Lets indexes on id and partition pruning serve "
								 "them; the result does not change for any ID that "
								 "snowflake_timestamp() accepts."),
							 &g_settings.rewrite_timestamp_comparisons, true, PGC_USERSET,
							 0, nullptr, nullptr, nullptr);

	RefuseUnknownSettings();
	for (const IntSetting &setting : int_settings)
		CheckIntSetting(setting);
	CheckCollisionPolicy();
	MarkGUCPrefixReserved("snowflake");

	snowflake::Layout layout;

	if (!snowflake::ParseEpoch(epoch_text, &layout.epoch_ms))
		REFUSE_SETTING(errmsg("invalid value for snowflake.epoch: \"%s\"", epoch_text),
					   errdetail("The epoch is a UTC time written "
								 "YYYY-MM-DD[ HH:MM[:SS[.fff]]]."));
	layout.node_bits = node_bits;
	layout.worker_bits = worker_bits;
	layout.sequence_bits = sequence_bits;
	ValidateWidths(layout);
	ValidateEpoch(layout);
	if (static_cast<uint32_t>(g_settings.node_id) > layout.MaxNodeId())
		REFUSE_SETTING(errmsg("snowflake.node_id %d is out of range for "
							  "snowflake.node_bits = %d",
							  g_settings.node_id, node_bits),
					   errdetail("With %d node bits, node ids run from 0 to %u.", node_bits,
								 layout.MaxNodeId()));
	if (static_cast<uint32_t>(g_settings.lease_workers) > layout.MaxWorkerId())
		REFUSE_SETTING(
			errmsg("snowflake.lease_workers %d leaves no worker id to sessions",
				   g_settings.lease_workers),
			errdetail("With %d worker bits there are %u worker ids; at least one must stay "
					  "for snowflake_nextval().",
					  worker_bits, layout.MaxWorkerId() + 1));
	g_settings.layout = layout;
}
