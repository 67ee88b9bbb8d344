/*
 * lease_rules.cpp
 *	  The rules of worker-id leases (see lease_rules.hpp).
 */
#include "lease_rules.hpp"

namespace snowflake {

namespace {

int64_t
Larger(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

}							/* namespace */

int64_t
NextNotBefore(const LeaseHistory &history, int64_t floor_minus_1)
{
	int64_t		not_before = floor_minus_1;

	if (!history.ever_leased)
		return not_before;
	not_before = Larger(not_before, history.not_before_ms);
	if (history.last_timestamp_ms != kNoTimestamp)
		not_before = Larger(not_before, history.last_timestamp_ms);
	/* Expired, or its connection ended: it may have issued up to not_after. */
	if (!history.released)
		not_before = Larger(not_before, history.not_after_ms - 1);
	return not_before;
}

LeaseChoice
ChooseWorker(const LeaseHistory *histories, size_t count, int64_t now_ms,
			 int64_t floor_minus_1, int64_t max_wait_ms)
{
	LeaseChoice choice{LeaseChoice::kAllHeld, 0, 0};
	const int64_t latest_start = Larger(now_ms, floor_minus_1 + 1) + max_wait_ms;
	bool		found = false;
	bool		found_never_leased = false;
	int64_t		chosen_free_since = 0;

	for (size_t i = 0; i < count; i++)
	{
		const LeaseHistory &h = histories[i];

		if (h.ever_leased && h.held)
			continue;

		int64_t		not_before = NextNotBefore(h, floor_minus_1);

		if (not_before > latest_start)
		{
			if (choice.outcome == LeaseChoice::kAllHeld ||
				(choice.outcome == LeaseChoice::kAllWaitTooLong &&
				 not_before < choice.not_before_ms))
			{
				choice.outcome = LeaseChoice::kAllWaitTooLong;
				choice.not_before_ms = not_before;
			}
			continue;
		}
		if (found_never_leased)
			continue;

		bool		better;

		if (!h.ever_leased)
			better = true;
		else
			better = !found || h.free_since_ms < chosen_free_since;
		if (better)
		{
			found = true;
			found_never_leased = !h.ever_leased;
			chosen_free_since = h.free_since_ms;
			choice.index = i;
			choice.not_before_ms = not_before;
		}
	}
	if (found)
		choice.outcome = LeaseChoice::kChosen;
	return choice;
}

ClientClock
CheckClientClock(int64_t client_ms, int64_t now_ms, int64_t tolerance_ms, int64_t previous_ms)
{
	if (client_ms < now_ms - tolerance_ms)
		return ClientClock::kBehind;
	if (client_ms > now_ms + tolerance_ms)
		return ClientClock::kAhead;
	if (previous_ms != kNoTimestamp && client_ms < previous_ms - tolerance_ms)
		return ClientClock::kBehindPrevious;
	return ClientClock::kOk;
}

int64_t
TtlMs(int32_t months, int32_t days, int64_t micros)
{
	if (months != 0)
		return -1;

	/* Floor division: "-0.5 ms" is -1 ms, refused like any negative ttl. */
	int64_t		ms = micros / 1000 - (micros % 1000 < 0 ? 1 : 0);
	int64_t		day_ms = static_cast<int64_t>(days) * 86400000;

	/* Both terms are far from overflow: |days| < 2^31, |ms| < 2^54. */
	ms += day_ms;
	if (ms < kMinLeaseTtlMs || ms > kMaxLeaseTtlMs)
		return -1;
	return ms;
}

ReportedId
CheckReportedId(const Layout &layout, int64_t id, uint32_t node_id, uint32_t worker_id,
				int64_t not_before_ms, int64_t not_after_ms, int64_t *timestamp_ms)
{
	if (id < 0)
		return ReportedId::kNegative;

	IdParts		parts = Decompose(layout, id);

	if (parts.node_id != node_id || parts.worker_id != worker_id)
		return ReportedId::kOtherWorker;

	int64_t		ts = layout.epoch_ms + parts.timestamp;

	if (ts <= not_before_ms || ts >= not_after_ms)
		return ReportedId::kOutsideWindow;
	*timestamp_ms = ts;
	return ReportedId::kOk;
}

}							/* namespace snowflake */
