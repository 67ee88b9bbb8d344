/*
 * clock_steps.hpp
 *	  Which wall-clock time to trust when the wall clock steps.
 *
 * Offset: CLOCK_REALTIME minus CLOCK_BOOTTIME.  Boot time never steps and
 * counts suspend, so the offset changes only when the wall clock is stepped
 * (or slewed, by at most 500 ppm).  A resumed or migrated VM moves both
 * clocks and is no step.
 *
 * Trusted time: boot time plus the trusted offset.  While no forward step
 * is pending it is the wall clock itself.  A forward step beyond the
 * threshold is pending until it is either corrected (the offset comes
 * back) or has lasted the confirmation, measured in boot time; meanwhile
 * the trusted time keeps to the offset before the step, so no ID and no
 * reservation follows a step that is then corrected.  A step forward is
 * always safe for uniqueness: accepting it late costs only timestamps that
 * lag during the confirmation.
 *
 * Small steps add up: within one window of the confirmation's length the
 * trusted offset rises by at most the threshold plus the slew, so a clock
 * that creeps forward in steps below the threshold is a forward step too.
 * A step on top of a pending one is a step of its own, with its own
 * confirmation: the offset accepted is one that lasted it.
 *
 * A step back is followed at once (IDs then stay above their mark, as
 * before), and a forward step that only returns, within the confirmation,
 * to an offset trusted before that step back is accepted at once: it leads
 * nowhere IDs have not been.  So does a pending step as far as IDs already
 * reach (TrustUpTo).
 *
 * Nothing here reads a clock: the caller passes both clocks, or their
 * readers, in.
 */
#ifndef SNOWFLAKE_CORE_CLOCK_STEPS_HPP
#define SNOWFLAKE_CORE_CLOCK_STEPS_HPP

#include <cstdint>
#include <type_traits>

namespace snowflake {

/* Boot time of "none" in ClockTrust. */
constexpr int64_t kNoBootTime = INT64_MIN;

/* A step back smaller than this is clock noise. */
constexpr int64_t kBackStepNoiseUs = 1000;

/* The largest slew rate of NTP and chrony: 500 ppm, 1 us per 2000 us. */
constexpr int64_t kSlewDivisor = 2000;

struct ClockStepRules
{
	int64_t threshold_us;    /* smaller forward steps are trusted at once */
	int64_t confirmation_us; /* boot time a forward step must last */
};

/* What the observers of one clock share (in shared memory, under a lock). */
struct ClockTrust
{
	int64_t trusted_offset_us;
	int64_t last_boot_us;          /* boot time of the last observation */
	int64_t pending_offset_us;     /* offset of the unconfirmed step */
	int64_t pending_since_us;      /* its first sight (boot time), or kNoBootTime */
	int64_t before_back_offset_us; /* offset before the last step back */
	int64_t back_since_us;         /* boot time of that step back, or kNoBootTime */
	int64_t window_offset_us;      /* trusted offset as the window began */
	int64_t window_since_us;       /* boot time the window began */
};

static_assert(std::is_trivially_destructible_v<ClockTrust>,
			  "ClockTrust lives in shared memory");

/* Trust in a clock that has not been seen to step. */
ClockTrust TrustClock(int64_t realtime_us, int64_t boottime_us);

enum class ClockEvent
{
	kNone,
	kForwardStep,   /* a forward step is now pending */
	kBackStep,      /* the clock stepped back */
	kStepCorrected, /* the pending step was undone */
	kStepAccepted,  /* the pending step lasted the confirmation */
};

struct ClockObservation
{
	int64_t trusted_unix_us;
	ClockEvent event;
	int64_t step_us; /* size of the step of the event */
};

/* Observes both clocks at one moment and updates "trust". */
ClockObservation ObserveClock(ClockTrust &trust, const ClockStepRules &rules,
							  int64_t realtime_us, int64_t boottime_us);

/*
 * While a forward step is pending, lets the trusted time rise as far as
 * "reached_unix_us" once the clock is there: IDs reach that far already (a
 * session waits for the clock to reach its next ID), so trusting the step
 * up to it leads nowhere new.  Returns the trusted Unix time.
 */
int64_t TrustUpTo(ClockTrust &trust, int64_t realtime_us, int64_t boottime_us,
				  int64_t reached_unix_us);

/* Both clocks as at one moment. */
struct ClockPair
{
	int64_t realtime_us;
	int64_t boottime_us;
};

constexpr int64_t kClockPairSpreadUs = 100;
constexpr int kClockPairTries = 8;

/*
 * Reads the boot time on each side of the wall clock, again while the two
 * lie over kClockPairSpreadUs apart, and keeps the narrowest pair: a
 * preemption between two reads would look like a step back of its length.
 * The pair takes the later boot time, so its offset is never too high and
 * the trusted time never runs past the wall clock.
 */
template <typename ReadRealtime, typename ReadBoottime>
ClockPair
ReadClockPair(ReadRealtime read_realtime, ReadBoottime read_boottime)
{
	ClockPair best{0, 0};
	int64_t best_spread = INT64_MAX;

	for (int i = 0; i < kClockPairTries && best_spread > kClockPairSpreadUs; i++)
	{
		int64_t before = read_boottime();
		int64_t realtime = read_realtime();
		int64_t after = read_boottime();

		if (i == 0 || after - before < best_spread)
		{
			best_spread = after - before;
			best = ClockPair{realtime, after};
		}
	}
	return best;
}

/* Whether a forward step is waiting for its confirmation. */
inline bool
StepPending(const ClockTrust &trust)
{
	return trust.pending_since_us != kNoBootTime;
}

} /* namespace snowflake */

#endif /* SNOWFLAKE_CORE_CLOCK_STEPS_HPP */
