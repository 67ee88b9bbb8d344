/*
 * confirmed_layouts.cpp
 *	  The first-ID checks that earlier sessions passed, in shared memory
 *	  (see confirmed_layouts.hpp).
 */
extern "C"
{
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_class.h"
#include "catalog/pg_database.h"
#include "catalog/pg_extension.h"
#include "miscadmin.h"			/* MyDatabaseId, GetUserId */
#include "storage/ipc.h"		/* shmem hooks */
#include "storage/lwlock.h"		/* AddinShmemInitLock */
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/acl.h"
#include "utils/syscache.h"
}

#include <cstring>

#include "pg/layout/confirmed_layouts.hpp"

namespace {

/* Databases times extension instances per server run; more check in full. */
constexpr uint32 kConfirmationCount = 256;

struct Confirmation
{
	Oid			database;
	Oid			function;		/* the function whose call passed the check */
	Oid			table;			/* the snowflake_layout it read */
};

struct ConfirmedLayouts
{
	slock_t		mutex;			/* guards the rest */
	uint32		count;
	Confirmation entries[kConfirmationCount];
};

ConfirmedLayouts *confirmed = nullptr;

}							/* namespace */

void
RequestConfirmedLayouts(void)
{
	RequestAddinShmemSpace(sizeof(ConfirmedLayouts));
}

void
StartConfirmedLayouts(void)
{
	bool		found;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	confirmed = static_cast<ConfirmedLayouts *>(
		ShmemInitStruct("snowflake confirmed layouts", sizeof(ConfirmedLayouts), &found));
	if (!found)
	{
		memset(confirmed, 0, sizeof(ConfirmedLayouts));
		SpinLockInit(&confirmed->mutex);
	}
	LWLockRelease(AddinShmemInitLock);
}

namespace {

/* The table an earlier session confirmed for "fn_oid" here, or InvalidOid. */
Oid
ConfirmedTable(Oid fn_oid)
{
	Oid			table = InvalidOid;

	if (confirmed == nullptr)
		return InvalidOid;
	SpinLockAcquire(&confirmed->mutex);
	for (uint32 i = 0; i < confirmed->count && !OidIsValid(table); i++)
		if (confirmed->entries[i].database == MyDatabaseId &&
			confirmed->entries[i].function == fn_oid)
			table = confirmed->entries[i].table;
	SpinLockRelease(&confirmed->mutex);
	return table;
}

/* Forgets every confirmation of the database "database". */
void
ForgetDatabase(Oid database)
{
	if (confirmed == nullptr)
		return;
	SpinLockAcquire(&confirmed->mutex);
	for (uint32 i = 0; i < confirmed->count;)
	{
		if (confirmed->entries[i].database == database)
			confirmed->entries[i] = confirmed->entries[--confirmed->count];
		else
			i++;
	}
	SpinLockRelease(&confirmed->mutex);
}

}							/* namespace */

/* Why (OIDs come back): confirmed_layouts.hpp.  Too much only costs a full check. */

void
ForgetConfirmedLayoutsOnAccess(ObjectAccessType access, Oid class_id, Oid object_id)
{
	if (class_id == DatabaseRelationId && (access == OAT_DROP || access == OAT_POST_CREATE))
		ForgetDatabase(object_id);
	else if (class_id == ExtensionRelationId && access == OAT_DROP)
		ForgetDatabase(MyDatabaseId);
}

bool
LayoutConfirmedEarlier(Oid fn_oid)
{
	Oid			table = ConfirmedTable(fn_oid);

	if (!OidIsValid(table))
		return false;

	/* One syscache entry, by OID: still the table, under its name? */
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(table));

	if (!HeapTupleIsValid(tuple))
		return false;

	bool		same = strcmp(NameStr(reinterpret_cast<Form_pg_class>(GETSTRUCT(tuple))->relname),
							  "snowflake_layout") == 0;

	ReleaseSysCache(tuple);
	if (!same)
		return false;

	bool		missing = false;
	AclResult	acl = pg_class_aclcheck_ext(table, GetUserId(), ACL_SELECT, &missing);

	if (missing)
		return false;
	if (acl != ACLCHECK_OK)
		aclcheck_error(acl, OBJECT_TABLE, "snowflake_layout");
	return true;
}

void
ShareLayoutConfirmation(Oid fn_oid, Oid table)
{
	if (confirmed == nullptr || !OidIsValid(table))
		return;
	SpinLockAcquire(&confirmed->mutex);

	Confirmation *entry = nullptr;

	for (uint32 i = 0; i < confirmed->count && entry == nullptr; i++)
		if (confirmed->entries[i].database == MyDatabaseId &&
			confirmed->entries[i].function == fn_oid)
			entry = &confirmed->entries[i];
	if (entry == nullptr && confirmed->count < kConfirmationCount)
		entry = &confirmed->entries[confirmed->count++];
	/* A known entry whose table was replaced (gone or renamed) takes the new one. */
	if (entry != nullptr)
	{
		entry->database = MyDatabaseId;
		entry->function = fn_oid;
		entry->table = table;
	}
	SpinLockRelease(&confirmed->mutex);
}
