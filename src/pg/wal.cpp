/*
 * wal.cpp
 *	  The resource manager's redo, desc and identify: each finds the record
 *	  kind's handlers in the table module.cpp registered.
 */
extern "C"
{
#include "postgres.h"

#include "access/xlog_internal.h"	/* RmgrData, RegisterCustomRmgr */
}

#include "pg/wal.hpp"

namespace {

const WalRecordHandlers *record_kinds = nullptr;
int			record_kind_count = 0;
void (*redo_start_hook)(void) = nullptr;

void
Startup(void)
{
	if (redo_start_hook != nullptr)
		redo_start_hook();
}

uint8
RecordKind(XLogReaderState *record)
{
	return XLogRecGetInfo(record) & XLR_RMGR_INFO_MASK;
}

const WalRecordHandlers *
HandlersOf(uint8 kind)
{
	for (int i = 0; i < record_kind_count; i++)
		if (record_kinds[i].info == kind)
			return &record_kinds[i];
	return nullptr;
}

void
Redo(XLogReaderState *record)
{
	const WalRecordHandlers *handlers = HandlersOf(RecordKind(record));

	if (handlers == nullptr)
		elog(PANIC, "snowflake redo: unknown record kind 0x%02X", RecordKind(record));
	handlers->redo(record);
}

void
Describe(StringInfo buf, XLogReaderState *record)
{
	const WalRecordHandlers *handlers = HandlersOf(RecordKind(record));

	if (handlers != nullptr)
		handlers->desc(buf, record);
}

const char *
Identify(uint8 info)
{
	switch (info & XLR_RMGR_INFO_MASK)
	{
		case kXlogReserve:
			return "RESERVE";
		case kXlogLease:
			return "LEASE";
		case kXlogSettings:
			return "SETTINGS";
	}
	return nullptr;
}

RmgrData	snowflake_rmgr = {
	"snowflake",				/* rm_name */
	Redo,						/* rm_redo */
	Describe,					/* rm_desc */
	Identify,					/* rm_identify */
	Startup,					/* rm_startup */
	nullptr,					/* rm_cleanup */
	nullptr,					/* rm_mask */
	nullptr,					/* rm_decode: logical decoding skips it */
};

}							/* namespace */

void
RegisterSnowflakeRmgr(const WalRecordHandlers *kinds, int count, void (*redo_start)(void))
{
	redo_start_hook = redo_start;
	record_kinds = kinds;
	record_kind_count = count;
	RegisterCustomRmgr(kSnowflakeRmgrId, &snowflake_rmgr);
}

void
CopyWalRecordBody(XLogReaderState *record, const char *name, void *body, size_t size)
{
	if (XLogRecGetDataLen(record) != size)
		elog(PANIC, "snowflake %s record has length %u, expected %zu", name,
			 XLogRecGetDataLen(record), size);
	memcpy(body, XLogRecGetData(record), size);
}
