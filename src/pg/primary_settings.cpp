/*
 * primary_settings.cpp
 *	  Writing, replaying and describing the SETTINGS record, and the check
 *	  of each LEASE record on a standby (see primary_settings.hpp).
 */
extern "C"
{
#include "postgres.h"

#include "access/xlog.h" /* RecoveryInProgress, XLogFlush */
#include "access/xloginsert.h"
#include "access/xlogrecovery.h" /* StandbyMode */
#include "utils/timestamp.h"     /* timestamptz_to_str */
}

#include "pg/clock.hpp"
#include "pg/durable_file.hpp"
#include "pg/primary_settings.hpp"
#include "pg/settings.hpp"
#include "pg/timestamps.hpp"

namespace {

constexpr uint32 kSettingsMagic = 0x534E5331; /* "SNS1" */

/* The record's body: plain data, a fixed size (a new field is a new kind). */
struct PrimarySettingsRecord
{
	uint32 magic;
	int32 node_id;
	int32 lease_workers;
	int16 node_bits;
	int16 worker_bits;
	int16 sequence_bits;
	int16 padding;
	int64 epoch_ms;
};

/* The primary's settings as of the WAL replayed so far (or the file's). */
bool primary_known = false;
PrimarySettingsRecord primary;

/* What the checks below read: the node id, the lease space and the layout. */
constexpr int kFileFields = 6;

void
WritePrimarySettingsFile(const PrimarySettingsRecord &p)
{
	char path[MAXPGPATH];
	int64 values[kFileFields] = {p.node_id,   p.lease_workers, p.worker_bits,
								 p.node_bits, p.sequence_bits, p.epoch_ms};

	DataDirectoryFile(kPrimarySettingsFileName, path);
	(void) WriteStateFile(path, values, lengthof(values), ERROR);
}

PrimarySettingsRecord
ReadRecord(XLogReaderState *record)
{
	PrimarySettingsRecord body;

	CopyWalRecordBody(record, "SETTINGS", &body, sizeof(body));
	if (body.magic != kSettingsMagic)
		elog(PANIC, "snowflake SETTINGS record has a wrong magic number");
	return body;
}

uint32
FirstLeaseWorkerId(int worker_bits, int lease_workers)
{
	return static_cast<uint32>((1 << worker_bits) - lease_workers);
}

/* The primary's lease space lies inside this server's. */
void
RequireLeaseSpaceCovers(const PrimarySettingsRecord &p)
{
	const snowflake::Layout &layout = g_settings.layout;

	if (p.lease_workers == 0)
		return;
	if (p.worker_bits != layout.worker_bits)
		ereport(
			FATAL,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg(
				 "recovery aborted because snowflake.worker_bits differs from the primary's"),
			 errdetail(
				 "The primary runs with snowflake.worker_bits = %d, this server with %d.",
				 p.worker_bits, layout.worker_bits),
			 errhint(
				 "Set snowflake.worker_bits = %d (the primary's layout) on this server and start it again.",
				 p.worker_bits)));
	/*
	 * Replay applies no lease image of another layout: a standby that runs
	 * with a successor layout would skip every lease the primary grants.
	 */
	if (p.node_bits != layout.node_bits || p.sequence_bits != layout.sequence_bits ||
		p.epoch_ms != layout.epoch_ms)
	{
		/* timestamptz_to_str() returns a static buffer: one copy per epoch. */
		char *primary_epoch = pstrdup(timestamptz_to_str(UnixMsToTimestampTz(p.epoch_ms)));
		char *own_epoch = pstrdup(timestamptz_to_str(UnixMsToTimestampTz(layout.epoch_ms)));

		ereport(
			FATAL,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg(
				 "recovery aborted because the snowflake layout differs from the primary's"),
			 errdetail(
				 "The primary leases worker ids under the layout epoch %s, %d node bits, "
				 "%d worker bits, %d sequence bits; this server runs epoch %s, %d node "
				 "bits, %d worker bits, %d sequence bits, and would skip its LEASE "
				 "records.",
				 primary_epoch, p.node_bits, p.worker_bits, p.sequence_bits, own_epoch,
				 layout.node_bits, layout.worker_bits, layout.sequence_bits),
			 errhint("Give this server the primary's snowflake.epoch, snowflake.node_bits "
					 "and snowflake.sequence_bits and start it again; change a layout on "
					 "the primary first.")));
	}
	if (p.lease_workers > g_settings.lease_workers)
		ereport(
			FATAL,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("recovery aborted because of insufficient snowflake.lease_workers"),
			 errdetail(
				 "The primary leases worker ids %u to %u (snowflake.lease_workers = %d); "
				 "this server's lease space has %d (snowflake.lease_workers = %d).",
				 FirstLeaseWorkerId(p.worker_bits, p.lease_workers), layout.MaxWorkerId(),
				 p.lease_workers, g_settings.lease_workers, g_settings.lease_workers),
			 errhint(
				 "Set snowflake.lease_workers to at least %d on this server and start it again.",
				 p.lease_workers)));
}

void
RequireNodeIdOfPrimary(int32 primary_node_id, const char *why)
{
	if (primary_node_id == g_settings.node_id)
		return;
	ereport(
		FATAL,
		(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
		 errmsg("recovery aborted because snowflake.node_id differs from the primary's"),
		 errdetail("The primary runs with snowflake.node_id = %d, this server with %d; %s.",
				   primary_node_id, g_settings.node_id, why),
		 errhint(
			 "Set snowflake.node_id = %d on this server (a standby shares its primary's node id) and start it again.",
			 primary_node_id)));
}

} /* namespace */

void
LogPrimarySettingsOnce(void)
{
	static bool logged = false;

	if (logged || RecoveryInProgress())
		return;

	const snowflake::Layout &layout = g_settings.layout;
	PrimarySettingsRecord body{};

	body.magic = kSettingsMagic;
	body.node_id = g_settings.node_id;
	body.lease_workers = g_settings.lease_workers;
	body.node_bits = static_cast<int16>(layout.node_bits);
	body.worker_bits = static_cast<int16>(layout.worker_bits);
	body.sequence_bits = static_cast<int16>(layout.sequence_bits);
	body.epoch_ms = layout.epoch_ms;

	XLogBeginInsert();
	XLogRegisterData(reinterpret_cast<char *>(&body), sizeof(body));
	XLogFlush(XLogInsert(kSnowflakeRmgrId, kXlogSettings));
	/* A base backup carries the file: its standby knows the primary's settings. */
	WritePrimarySettingsFile(body);
	logged = true;
}

void
RequireSettingsCoverPrimary(void)
{
	if (!StandbyMode || !primary_known)
		return;
	RequireLeaseSpaceCovers(primary);
	if (primary.lease_workers > 0)
		RequireNodeIdOfPrimary(primary.node_id,
							   "this server would inherit leases of the other");
}

void
CheckPrimarySettingsAtRedoStart(void)
{
	char path[MAXPGPATH];
	int64 values[kFileFields];

	/*
	 * Only a standby checks the file; a primary's crash recovery would stop
	 * for nothing, and the primary writes the file again once it runs.
	 */
	if (!StandbyMode)
		return;
	DataDirectoryFile(kPrimarySettingsFileName, path);
	if (!ReadStateFile(path, "primary settings file", values, lengthof(values),
					   "Copy snowflake.primary_settings from the primary's data directory, "
					   "or remove it: this server then checks the primary's settings at "
					   "every LEASE record and at the primary's next SETTINGS record."))
		return;
	primary.magic = kSettingsMagic;
	primary.node_id = static_cast<int32>(values[0]);
	primary.lease_workers = static_cast<int32>(values[1]);
	primary.worker_bits = static_cast<int16>(values[2]);
	primary.node_bits = static_cast<int16>(values[3]);
	primary.sequence_bits = static_cast<int16>(values[4]);
	primary.epoch_ms = values[5];
	primary_known = true;
	RequireSettingsCoverPrimary();
}

void
ReplayPrimarySettingsRecord(XLogReaderState *record)
{
	primary = ReadRecord(record);
	primary_known = true;
	/* First the file, as PostgreSQL updates pg_control: a restart checks again. */
	WritePrimarySettingsFile(primary);
	RequireSettingsCoverPrimary();
}

void
DescribePrimarySettingsRecord(StringInfo buf, XLogReaderState *record)
{
	PrimarySettingsRecord body;

	if (XLogRecGetDataLen(record) != sizeof(body))
		return;
	memcpy(&body, XLogRecGetData(record), sizeof(body));
	appendStringInfo(buf,
					 "node %d lease_workers %d layout epoch " INT64_FORMAT " bits %d/%d/%d",
					 body.node_id, body.lease_workers, body.epoch_ms, body.node_bits,
					 body.worker_bits, body.sequence_bits);
}

void
CheckLeaseRecordApplies(const LeaseRecordFacts &image)
{
	if (!StandbyMode)
		return;
	if (image.node_id != g_settings.node_id)
	{
		/* History of the primary's earlier node id: the primary skips it too. */
		if (primary_known && image.node_id != primary.node_id)
			return;
		if (primary_known || image.live)
			RequireNodeIdOfPrimary(image.node_id,
								   "a LEASE record holds a lease of the primary's");
		return;
	}

	uint32 first = SessionWorkerIds();
	uint32 needed = g_settings.layout.MaxWorkerId() + 1 - image.worker_id;

	if (primary_known && static_cast<uint32>(primary.lease_workers) > needed)
		needed = static_cast<uint32>(primary.lease_workers);

	if (image.worker_id < first || image.worker_id > g_settings.layout.MaxWorkerId())
		ereport(
			FATAL,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("recovery aborted because of insufficient snowflake.lease_workers"),
			 errdetail("A LEASE record holds worker id %u of the primary; this server's "
					   "lease space is %u to %u (snowflake.lease_workers = %d).",
					   image.worker_id, first, g_settings.layout.MaxWorkerId(),
					   g_settings.lease_workers),
			 errhint(
				 "Set snowflake.lease_workers to at least %u on this server and start it again.",
				 needed)));
}
