/*
 * replication_check.cpp
 *	  Notices a publication or subscription that stopped carrying
 *	  snowflake_nodes, or the table's new qualified name (see the header).
 */
extern "C"
{
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_publication.h"
#include "catalog/pg_subscription.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
}

#include "pg/registry/replication_check.hpp"

namespace {

constexpr int kMaxTracked = 64;

/* Publications and subscriptions seen carrying the table, by OID. */
struct Tracked
{
	Oid oids[kMaxTracked];
	int count;
};

Tracked publications = {{}, 0};
Tracked subscriptions = {{}, 0};

/* The table's qualified name when a subscription first carried it. */
char carried_schema[NAMEDATALEN] = "";
char carried_table[NAMEDATALEN] = "";

/* The problem: it outlives the round's transaction. */
char problem_text[256];

bool
Contains(const Tracked *set, Oid oid)
{
	for (int i = 0; i < set->count; i++)
		if (set->oids[i] == oid)
			return true;
	return false;
}

void
Remember(Tracked *set, Oid oid)
{
	if (!Contains(set, oid) && set->count < kMaxTracked)
		set->oids[set->count++] = oid;
}

/* Forgets the OIDs gone (dropped) from the syscache "cache_id". */
void
ForgetDropped(Tracked *set, int cache_id)
{
	int kept = 0;

	for (int i = 0; i < set->count; i++)
		if (SearchSysCacheExists1(cache_id, ObjectIdGetDatum(set->oids[i])))
			set->oids[kept++] = set->oids[i];
	set->count = kept;
}

char *
PublicationName(Oid oid)
{
	HeapTuple tuple = SearchSysCache1(PUBLICATIONOID, ObjectIdGetDatum(oid));
	char *name = pstrdup(NameStr(((Form_pg_publication) GETSTRUCT(tuple))->pubname));

	ReleaseSysCache(tuple);
	return name;
}

/* The publications that carry the table now: by the table, its schema, or all. */
List *
CarryingPublications(Relation nodes)
{
	List *carrying = GetRelationPublications(RelationGetRelid(nodes));

	carrying = list_concat_unique_oid(carrying,
									  GetSchemaPublications(RelationGetNamespace(nodes)));
	return list_concat_unique_oid(carrying, GetAllTablesPublications());
}

}							/* namespace */

const char *
CheckNodesReplication(Relation nodes, const char **hint)
{
	Oid relid = RelationGetRelid(nodes);
	List *carrying = CarryingPublications(nodes);
	const char *problem = nullptr;

	ForgetDropped(&publications, PUBLICATIONOID);
	ForgetDropped(&subscriptions, SUBSCRIPTIONOID);

	for (int i = 0; i < publications.count && problem == nullptr; i++)
		if (!list_member_oid(carrying, publications.oids[i]))
		{
			problem = psprintf("publication \"%s\" no longer carries snowflake_nodes",
							   PublicationName(publications.oids[i]));
			*hint = "Add it back (ALTER PUBLICATION ... ADD TABLE with the name that "
					"snowflake_publication_tables() gives), or drop the publication if "
					"the node leaves the multi-primary setup.";
		}
	ListCell *cell;

	foreach (cell, carrying)
		Remember(&publications, lfirst_oid(cell));

	/* pg_subscription is shared: a heap scan, this database's rows. */
	Relation catalog = table_open(SubscriptionRelationId, AccessShareLock);
	SysScanDesc scan = systable_beginscan(catalog, InvalidOid, false, nullptr, 0, nullptr);
	HeapTuple tuple;
	bool any_carries = false;

	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		Form_pg_subscription sub = (Form_pg_subscription) GETSTRUCT(tuple);

		if (sub->subdbid != MyDatabaseId)
			continue;
		if (SearchSysCacheExists2(SUBSCRIPTIONRELMAP, ObjectIdGetDatum(relid),
								  ObjectIdGetDatum(sub->oid)))
		{
			Remember(&subscriptions, sub->oid);
			any_carries = true;
		}
		else if (Contains(&subscriptions, sub->oid) && problem == nullptr)
		{
			problem = psprintf("subscription \"%s\" no longer carries snowflake_nodes",
							   NameStr(sub->subname));
			*hint = "Have its publisher publish snowflake_nodes again, then run ALTER "
					"SUBSCRIPTION ... REFRESH PUBLICATION, or drop the subscription if the "
					"node leaves the multi-primary setup.";
		}
	}
	systable_endscan(scan);
	table_close(catalog, AccessShareLock);

	/* Subscribers map rows by qualified name: a rename cuts them off. */
	char *schema = get_namespace_name(RelationGetNamespace(nodes));
	const char *table = RelationGetRelationName(nodes);

	if (!any_carries)
		carried_schema[0] = carried_table[0] = '\0';
	else if (carried_schema[0] == '\0')
	{
		strlcpy(carried_schema, schema, sizeof(carried_schema));
		strlcpy(carried_table, table, sizeof(carried_table));
	}
	else if (problem == nullptr &&
			 (strcmp(carried_schema, schema) != 0 || strcmp(carried_table, table) != 0))
	{
		problem = psprintf("snowflake_nodes was renamed from %s.%s to %s.%s while a "
						   "subscription carries it",
						   carried_schema, carried_table, schema, table);
		*hint = "Rename it back; logical replication applies rows by qualified name. "
				"Install the extension in a schema that only superusers own.";
	}
	if (problem == nullptr)
		return nullptr;
	strlcpy(problem_text, problem, sizeof(problem_text));
	return problem_text;
}
