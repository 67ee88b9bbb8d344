/*
 * clock_steps.cpp
 *	  The rules of clock_steps.hpp.
 */
#include "clock_steps.hpp"

#include <algorithm>

namespace snowflake {

ClockTrust
TrustClock(int64_t realtime_us, int64_t boottime_us)
{
	return ClockTrust{realtime_us - boottime_us,
					  boottime_us,
					  0,
					  kNoBootTime,
					  0,
					  kNoBootTime,
					  realtime_us - boottime_us,
					  boottime_us};
}

/* How far a clock slews, at most, over "from" to "to" (boot times). */
static int64_t
Slew(int64_t from_us, int64_t to_us)
{
	return to_us > from_us ? (to_us - from_us) / kSlewDivisor : 0;
}

ClockObservation
ObserveClock(ClockTrust &trust, const ClockStepRules &rules, int64_t realtime_us,
			 int64_t boottime_us)
{
	int64_t offset = realtime_us - boottime_us;
	int64_t elapsed = boottime_us > trust.last_boot_us ? boottime_us - trust.last_boot_us :
														 0;
	/* A slewing clock drifts this far from the trusted offset meanwhile. */
	int64_t allowed = rules.threshold_us + elapsed / kSlewDivisor;
	int64_t ahead = offset - trust.trusted_offset_us;
	ClockObservation seen{realtime_us, ClockEvent::kNone, 0};

	/*
	 * Read before the last observation, seen after it: it would undo what
	 * that one saw.  It changes nothing, and gets the trusted time.
	 */
	if (boottime_us < trust.last_boot_us)
	{
		if (StepPending(trust) || ahead > allowed)
			seen.trusted_unix_us = std::min(realtime_us,
											boottime_us + trust.trusted_offset_us);
		return seen;
	}
	if (trust.back_since_us != kNoBootTime &&
		boottime_us - trust.back_since_us >= rules.confirmation_us)
		trust.back_since_us = kNoBootTime;
	/* A new window begins where the trusted offset was last seen. */
	if (boottime_us - trust.window_since_us >= rules.confirmation_us)
	{
		trust.window_offset_us = trust.trusted_offset_us;
		trust.window_since_us = trust.last_boot_us;
	}
	trust.last_boot_us = boottime_us;

	/* Beyond the step since the last observation, or the steps of the window. */
	bool beyond = ahead > allowed ||
		offset - trust.window_offset_us >
			rules.threshold_us + Slew(trust.window_since_us, boottime_us);

	if (StepPending(trust))
	{
		if (!beyond)
		{
			seen.event = ClockEvent::kStepCorrected;
			seen.step_us = trust.pending_offset_us - offset;
			trust.pending_since_us = kNoBootTime;
			trust.trusted_offset_us = offset;
		}
		else if (offset - trust.pending_offset_us >
				 rules.threshold_us + Slew(trust.pending_since_us, boottime_us))
		{
			/* A step on top of the pending one: it has lasted nothing yet. */
			seen.event = ClockEvent::kForwardStep;
			seen.step_us = ahead;
			trust.pending_offset_us = offset;
			trust.pending_since_us = boottime_us;
			seen.trusted_unix_us = boottime_us + trust.trusted_offset_us;
		}
		else if (boottime_us - trust.pending_since_us >= rules.confirmation_us)
		{
			seen.event = ClockEvent::kStepAccepted;
			seen.step_us = ahead;
			trust.pending_since_us = kNoBootTime;
			trust.trusted_offset_us = offset;
			trust.window_offset_us = offset;
			trust.window_since_us = boottime_us;
		}
		else
		{
			/* What is left of the step: a rise from there is a new step. */
			trust.pending_offset_us = std::min(trust.pending_offset_us, offset);
			seen.trusted_unix_us = boottime_us + trust.trusted_offset_us;
		}
		return seen;
	}

	if (beyond)
	{
		/* Back to where the clock was before a recent step back: nothing new. */
		if (trust.back_since_us != kNoBootTime &&
			offset <= trust.before_back_offset_us + allowed)
		{
			trust.trusted_offset_us = offset;
			trust.back_since_us = kNoBootTime;
			return seen;
		}
		seen.event = ClockEvent::kForwardStep;
		seen.step_us = ahead;
		trust.pending_offset_us = offset;
		trust.pending_since_us = boottime_us;
		seen.trusted_unix_us = boottime_us + trust.trusted_offset_us;
		return seen;
	}
	if (-ahead >= kBackStepNoiseUs && -ahead > elapsed / kSlewDivisor)
	{
		seen.event = ClockEvent::kBackStep;
		seen.step_us = -ahead;
		if (trust.back_since_us == kNoBootTime ||
			trust.trusted_offset_us > trust.before_back_offset_us)
			trust.before_back_offset_us = trust.trusted_offset_us;
		trust.back_since_us = boottime_us;
	}
	trust.trusted_offset_us = offset;
	return seen;
}

int64_t
TrustUpTo(ClockTrust &trust, int64_t realtime_us, int64_t boottime_us,
		  int64_t reached_unix_us)
{
	if (!StepPending(trust))
		return realtime_us;

	int64_t offset = std::min(realtime_us, reached_unix_us) - boottime_us;

	trust.trusted_offset_us = std::max(trust.trusted_offset_us, offset);
	return boottime_us + trust.trusted_offset_us;
}

} /* namespace snowflake */
