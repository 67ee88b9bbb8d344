/*
 * settings.cpp
 *	  Definition and whole-layout validation of the snowflake.* settings.
 */
#include "postgres_headers.hpp"

#include "../core/epoch.hpp"
#include "clock.hpp"
#include "settings.hpp"

Settings	g_settings;

/* GUC targets must outlive _PG_init: the GUC machinery reads them later. */
static char *epoch_text = nullptr;
static int	node_bits = 3;
static int	worker_bits = 7;
static int	sequence_bits = 12;

static const struct config_enum_entry collision_policies[] = {
	{"warn", kCollisionWarn, false},
	{"error", kCollisionError, false},
	{nullptr, 0, false},
};

static void
DefineIntSetting(const char *name, const char *description, int *target,
				 int boot, int min, int max, GucContext context, int flags)
{
	DefineCustomIntVariable(name, description, nullptr, target, boot, min, max,
							context, flags, nullptr, nullptr, nullptr);
}

[[noreturn]] static void
RefuseSetting(const char *message, const char *detail)
{
	ereport(FATAL,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("%s", message),
			 detail ? errdetail("%s", detail) : 0,
			 errhint("Change the setting in postgresql.conf and start the server again.")));
}

static void
ValidateWidths(const snowflake::Layout &layout)
{
	switch (snowflake::CheckWidths(layout))
	{
		case snowflake::WidthProblem::kOk:
			return;
		case snowflake::WidthProblem::kNegativeWidth:
		case snowflake::WidthProblem::kNoSequenceBits:
			RefuseSetting("snowflake.sequence_bits must be at least 1", nullptr);
			return;
		case snowflake::WidthProblem::kTimestampTooNarrow:
			RefuseSetting(psprintf("snowflake.node_bits (%d) + snowflake.worker_bits (%d) + "
								   "snowflake.sequence_bits (%d) leave %d bits for the timestamp",
								   layout.node_bits, layout.worker_bits,
								   layout.sequence_bits, layout.TimestampBits()),
						  psprintf("A snowflake ID has 63 usable bits and the timestamp "
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
			RefuseSetting(psprintf("snowflake.epoch \"%s\" is in the future", epoch_text),
						  nullptr);
			return;
		case snowflake::EpochProblem::kExhausted:
			RefuseSetting(psprintf("snowflake.epoch \"%s\" is too far in the past for "
								   "%d timestamp bits",
								   epoch_text, layout.TimestampBits()),
						  "Every timestamp this layout can express lies in the past.");
			return;
	}
}

void
DefineSettings(void)
{
	DefineCustomStringVariable("snowflake.epoch",
							   "Start of the ID timestamp (UTC), as YYYY-MM-DD[ HH:MM[:SS[.fff]]].",
							   nullptr, &epoch_text, "2025-01-01",
							   PGC_POSTMASTER, 0, nullptr, nullptr, nullptr);
	DefineIntSetting("snowflake.node_bits", "Bits of each ID that hold the node id.",
					 &node_bits, 3, 0, 16, PGC_POSTMASTER, 0);
	DefineIntSetting("snowflake.worker_bits", "Bits of each ID that hold the worker id.",
					 &worker_bits, 7, 0, 16, PGC_POSTMASTER, 0);
	DefineIntSetting("snowflake.sequence_bits",
					 "Bits of each ID that count IDs within one millisecond.",
					 &sequence_bits, 12, 1, 24, PGC_POSTMASTER, 0);
	DefineIntSetting("snowflake.node_id", "Node id of this server, unique among primaries.",
					 &g_settings.node_id, 0, 0, 65535, PGC_POSTMASTER, 0);
	DefineIntSetting("snowflake.max_drift",
					 "How far ID timestamps may run ahead of the wall clock.",
					 &g_settings.max_drift_ms, 1000, 0, kMaxDriftLimitMs,
					 PGC_POSTMASTER, GUC_UNIT_MS);
	DefineIntSetting("snowflake.reserve_ahead",
					 "How far the durable reservation runs ahead of the newest ID.",
					 &g_settings.reserve_ahead_ms, 1000, 10, kMaxReserveAheadMs,
					 PGC_SIGHUP, GUC_UNIT_MS);
	DefineIntSetting("snowflake.clock_wait_timeout",
					 "How long a session waits for the clock to come within "
					 "snowflake.max_drift of the next ID.",
					 &g_settings.clock_wait_timeout_ms, 10000, 0, 3600000,
					 PGC_USERSET, GUC_UNIT_MS);
	DefineCustomStringVariable("snowflake.database",
							   "Database whose snowflake_nodes table registers this node.",
							   nullptr, &g_settings.registry_database, "postgres",
							   PGC_POSTMASTER, 0, nullptr, nullptr, nullptr);
	DefineIntSetting("snowflake.registry_interval",
					 "How often this node heartbeats in snowflake_nodes and looks "
					 "for another running instance with its node_id.",
					 &g_settings.registry_interval_ms, 10000, 100, 3600000,
					 PGC_SIGHUP, GUC_UNIT_MS);
	DefineCustomEnumVariable("snowflake.on_node_collision",
							 "What to do when another running instance uses this node_id.",
							 nullptr, &g_settings.on_node_collision, kCollisionWarn,
							 collision_policies, PGC_SIGHUP, 0, nullptr, nullptr, nullptr);
	MarkGUCPrefixReserved("snowflake");

	snowflake::Layout layout;

	if (!snowflake::ParseEpoch(epoch_text, &layout.epoch_ms))
		RefuseSetting(psprintf("invalid value for snowflake.epoch: \"%s\"", epoch_text),
					  "The epoch is a UTC time written YYYY-MM-DD[ HH:MM[:SS[.fff]]].");
	layout.node_bits = node_bits;
	layout.worker_bits = worker_bits;
	layout.sequence_bits = sequence_bits;
	ValidateWidths(layout);
	ValidateEpoch(layout);
	if (static_cast<uint32_t>(g_settings.node_id) > layout.MaxNodeId())
		RefuseSetting(psprintf("snowflake.node_id %d is out of range for "
							   "snowflake.node_bits = %d",
							   g_settings.node_id, node_bits),
					  psprintf("With %d node bits, node ids run from 0 to %u.",
							   node_bits, layout.MaxNodeId()));
	g_settings.layout = layout;
}
