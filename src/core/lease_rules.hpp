/*
 * lease_rules.hpp
 *	  The rules of worker-id leases, without a server: which free worker id
 *	  a grant takes, where the new holder's window starts, and which client
 *	  clocks, ttls and reported IDs are refused.
 *
 * A lease is a window of timestamps (Unix ms): its holder issues IDs whose
 * timestamps lie strictly between not_before and not_after.  Consecutive
 * windows of one worker id never overlap, because the next holder's
 * not_before is at least
 *	- the last timestamp the previous holder reported,
 *	- the previous not_after - 1, unless the holder released the lease (it
 *	  may have issued IDs up to there),
 *	- the previous not_before,
 *	- the generation floor - 1 (sessions used the id before this start).
 * src/pg/leases/ applies them to the shared lease table.
 */
#ifndef SNOWFLAKE_CORE_LEASE_RULES_HPP
#define SNOWFLAKE_CORE_LEASE_RULES_HPP

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "layout.hpp"

namespace snowflake {

/* "No timestamp reported." */
constexpr int64_t kNoTimestamp = INT64_MIN;

/* The shortest and the longest ttl of a time-scoped lease. */
constexpr int64_t kMinLeaseTtlMs = 1000;
constexpr int64_t kMaxLeaseTtlMs = 86400000;

/* What a grant needs to know of one worker id's last lease. */
struct LeaseHistory
{
	bool		ever_leased;	/* false: nothing below applies */
	bool		held;			/* by a live holder: not free */
	bool		released;		/* the holder said where it stopped */
	int64_t		not_before_ms;
	int64_t		not_after_ms;
	int64_t		last_timestamp_ms;	/* kNoTimestamp: none reported */
	int64_t		free_since_ms;	/* release time, else not_after */
};

static_assert(std::is_trivially_destructible_v<LeaseHistory>,
			  "src/pg keeps LeaseHistory in palloc'd arrays and on frames that "
			  "ereport(ERROR) leaves by longjmp");

/*
 * The not_before of the worker id's next holder: above everything its
 * previous holder could have issued, and above "floor_minus_1", the last
 * timestamp sessions of earlier runs could have used.
 */
int64_t		NextNotBefore(const LeaseHistory &history, int64_t floor_minus_1);

/* What ChooseWorker() found. */
struct LeaseChoice
{
	enum Outcome
	{
		kChosen,
		kAllHeld,				/* no free worker id */
		kAllWaitTooLong,		/* free ones, each not_before too far ahead */
	} outcome;
	size_t		index;			/* kChosen: the worker id's index */
	int64_t		not_before_ms;	/* kChosen: its not_before; kAllWaitTooLong:
								 * the nearest one */
};

static_assert(std::is_trivially_destructible_v<LeaseChoice>,
			  "src/pg keeps LeaseChoice on frames that ereport(ERROR) leaves by longjmp");

/*
 * Picks the worker id a grant takes among "count" histories: never-leased
 * ones first (lowest index), then the one freed longest ago, so a just
 * freed id is handed out last.  Free ids whose not_before lies more than
 * "max_wait_ms" past max(now, floor) are skipped: holders that vanished
 * (or a revocation) pushed them ahead, and another free id may be usable
 * at once.
 */
LeaseChoice ChooseWorker(const LeaseHistory *histories, size_t count, int64_t now_ms,
						 int64_t floor_minus_1, int64_t max_wait_ms);

/* The not_after of a new or renewed window. */
inline int64_t
WindowEnd(int64_t now_ms, int64_t not_before_ms, int64_t window_ms)
{
	return (now_ms > not_before_ms ? now_ms : not_before_ms) + window_ms;
}

/* Why a client's clock was refused. */
enum class ClientClock
{
	kOk,
	kBehind,					/* behind the database's by more than the tolerance */
	kAhead,
	kBehindPrevious,			/* behind the previous holder's last report */
};

/*
 * Checks the client's clock "client_ms" against the database's "now_ms"
 * and against the last timestamp the worker id's previous holder reported
 * ("previous_ms", kNoTimestamp for none), each with "tolerance_ms".
 */
ClientClock CheckClientClock(int64_t client_ms, int64_t now_ms, int64_t tolerance_ms,
							 int64_t previous_ms);

/*
 * A ttl given as PostgreSQL's interval fields, in ms; -1 if it is refused:
 * months or years (no fixed length), or outside 1 s to 24 h.  A day counts
 * 24 hours; microseconds are dropped.
 */
int64_t		TtlMs(int32_t months, int32_t days, int64_t micros);

/* Why an ID reported for a lease was refused. */
enum class ReportedId
{
	kOk,
	kNegative,
	kOtherWorker,				/* another node or worker id */
	kOutsideWindow,
};

/*
 * Checks an ID a holder reports under "layout" for the lease of "node_id"
 * and "worker_id" whose window is (not_before_ms, not_after_ms) in Unix ms;
 * on kOk, *timestamp_ms is its timestamp (Unix ms).
 */
ReportedId	CheckReportedId(const Layout &layout, int64_t id, uint32_t node_id,
							uint32_t worker_id, int64_t not_before_ms,
							int64_t not_after_ms, int64_t *timestamp_ms);

}							/* namespace snowflake */

#endif							/* SNOWFLAKE_CORE_LEASE_RULES_HPP */
