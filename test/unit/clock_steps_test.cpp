/*
 * clock_steps_test.cpp
 *	  Unit tests of core/clock_steps.hpp: forward steps held until confirmed
 *	  or corrected, steps back followed, slew and suspend not taken for steps.
 */
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "core/clock_steps.hpp"

namespace snowflake {
namespace {

constexpr int64_t kSecond = 1000000;
constexpr int64_t kHour = 3600 * kSecond;
constexpr int64_t kDay = 24 * kHour;
constexpr int64_t kUnix0 = INT64_C(1796000000) * kSecond;
constexpr ClockStepRules kRules{kSecond, 600 * kSecond};

/* A clock "step_us" ahead of the true time kUnix0 + boot. */
struct Host
{
	ClockTrust trust = TrustClock(kUnix0 + 100 * kSecond, 100 * kSecond);
	int64_t boot = 100 * kSecond;
	int64_t step = 0;

	ClockObservation Tick(int64_t us)
	{
		boot += us;
		return ObserveClock(trust, kRules, kUnix0 + boot + step, boot);
	}

	/* Ticks "us": is the event "event", and the trusted time "lead" past the true time? */
	testing::AssertionResult Sees(int64_t us, ClockEvent event, int64_t lead = 0)
	{
		ClockObservation seen = Tick(us);

		if (seen.event == event && seen.trusted_unix_us == kUnix0 + boot + lead)
			return testing::AssertionSuccess();
		return testing::AssertionFailure()
			<< "event " << static_cast<int>(seen.event) << ", trusted time "
			<< seen.trusted_unix_us - kUnix0 - boot << " us past the true time";
	}
};

TEST(ClockSteps, SteadyClockIsTrusted)
{
	Host host;

	for (int i = 0; i < 100; i++)
		EXPECT_TRUE(host.Sees(50000, ClockEvent::kNone)) << i;
}

TEST(ClockSteps, CorrectedStepCostsNothing)
{
	Host host;

	host.step = 30 * kDay;
	ClockObservation seen = host.Tick(50000);

	EXPECT_EQ(seen.event, ClockEvent::kForwardStep);
	EXPECT_EQ(seen.step_us, 30 * kDay);
	EXPECT_EQ(seen.trusted_unix_us, kUnix0 + host.boot);
	EXPECT_TRUE(StepPending(host.trust));
	for (int i = 0; i < 100; i++)
		EXPECT_TRUE(host.Sees(500000, ClockEvent::kNone)) << i;
	host.step = 0;
	seen = host.Tick(50000);
	EXPECT_EQ(seen.event, ClockEvent::kStepCorrected);
	EXPECT_EQ(seen.step_us, 30 * kDay);
	EXPECT_EQ(seen.trusted_unix_us, kUnix0 + host.boot);
	EXPECT_FALSE(StepPending(host.trust));
}

TEST(ClockSteps, PersistentStepIsAcceptedAfterConfirmation)
{
	Host host;

	host.step = kHour;
	EXPECT_EQ(host.Tick(1000).event, ClockEvent::kForwardStep);
	EXPECT_TRUE(host.Sees(kRules.confirmation_us - 1000, ClockEvent::kNone));
	EXPECT_TRUE(host.Sees(1000, ClockEvent::kStepAccepted, kHour));
	EXPECT_TRUE(host.Sees(1000, ClockEvent::kNone, kHour));
}

TEST(ClockSteps, StepBelowThresholdIsTrusted)
{
	Host host;

	host.step = kSecond - 1;
	EXPECT_TRUE(host.Sees(1000, ClockEvent::kNone, kSecond - 1));
}

TEST(ClockSteps, SlewOverALongPauseIsNoStep)
{
	Host host;

	/* A day apart, the clock slewed 40 s at under 500 ppm. */
	host.step = 40 * kSecond;
	EXPECT_EQ(host.Tick(kDay).event, ClockEvent::kNone);
}

TEST(ClockSteps, SuspendIsNoStep)
{
	Host host;

	/* Both clocks move by a day: boot time counts suspend. */
	EXPECT_TRUE(host.Sees(kDay, ClockEvent::kNone));
}

TEST(ClockSteps, StepBackIsFollowedAndItsCorrectionTrusted)
{
	Host host;

	host.step = -kHour;
	ClockObservation seen = host.Tick(50000);

	EXPECT_EQ(seen.event, ClockEvent::kBackStep);
	EXPECT_EQ(seen.step_us, kHour);
	EXPECT_EQ(seen.trusted_unix_us, kUnix0 + host.boot - kHour);
	host.Tick(60 * kSecond);
	host.step = 0;
	EXPECT_TRUE(host.Sees(50000, ClockEvent::kNone));
}

TEST(ClockSteps, ReturnAfterTheConfirmationIsAStepAgain)
{
	Host host;

	host.step = -kHour;
	host.Tick(50000);
	host.Tick(kRules.confirmation_us);
	host.step = 0;
	EXPECT_EQ(host.Tick(50000).event, ClockEvent::kForwardStep);
}

TEST(ClockSteps, StepBackDuringAPendingStepCorrectsIt)
{
	Host host;

	host.step = kHour;
	host.Tick(1000);
	host.step = -10 * kSecond;
	EXPECT_TRUE(host.Sees(1000, ClockEvent::kStepCorrected, -10 * kSecond));
}

TEST(ClockSteps, ObserversThatLagDoNotMoveTrustBack)
{
	Host host;

	host.Tick(kSecond);
	ClockTrust before = host.trust;
	/* A reading taken earlier, observed late: boot time does not go back. */
	ObserveClock(host.trust, kRules, kUnix0 + host.boot - 10, host.boot - 10);
	EXPECT_EQ(host.trust.last_boot_us, before.last_boot_us);
	EXPECT_FALSE(StepPending(host.trust));
}

TEST(ClockSteps, CreepingStepsAddUpToAStep)
{
	Host host;

	/* 0.8 s every 50 ms: each below the threshold, 16 s a second together. */
	for (int i = 0; i < 100; i++)
	{
		host.step += 800000;
		ClockObservation seen = host.Tick(50000);

		EXPECT_LE(seen.trusted_unix_us,
				  kUnix0 + host.boot + kSecond + host.boot / kSlewDivisor);
	}
	EXPECT_TRUE(StepPending(host.trust));
}

TEST(ClockSteps, StepsBelowTheThresholdAWindowApartAreTrusted)
{
	Host host;

	for (int i = 0; i < 5; i++)
	{
		host.step += 900000;
		EXPECT_TRUE(host.Sees(kRules.confirmation_us, ClockEvent::kNone, host.step)) << i;
	}
}

TEST(ClockSteps, StepOnAPendingStepNeedsItsOwnConfirmation)
{
	Host host;

	host.step = 2 * kSecond;
	EXPECT_EQ(host.Tick(1000).event, ClockEvent::kForwardStep);
	EXPECT_EQ(host.Tick(kRules.confirmation_us - kSecond).event, ClockEvent::kNone);
	host.step = 30 * kDay;
	ClockObservation seen = host.Tick(kSecond / 2);
	EXPECT_EQ(seen.event, ClockEvent::kForwardStep);
	EXPECT_EQ(seen.step_us, 30 * kDay);
	/* Past the first step's confirmation, the 30-day one is still pending. */
	EXPECT_TRUE(host.Sees(kSecond, ClockEvent::kNone));
	EXPECT_TRUE(host.Sees(kRules.confirmation_us, ClockEvent::kStepAccepted, 30 * kDay));
}

TEST(ClockSteps, CreepOnAPendingStepIsNotAccepted)
{
	Host host;

	host.step = 2 * kSecond;
	EXPECT_EQ(host.Tick(1000).event, ClockEvent::kForwardStep);
	host.Tick(kRules.confirmation_us - 10 * kSecond);
	for (int i = 0; i < 20; i++)
	{
		host.step += 800000;
		host.Tick(kSecond);
	}
	/* The first step's confirmation is over, but 16 s of it are new. */
	EXPECT_TRUE(StepPending(host.trust));
	ClockObservation seen = host.Tick(1000);
	EXPECT_EQ(seen.trusted_unix_us, kUnix0 + host.boot);
}

TEST(ClockSteps, ReadingFromBeforeTheLastDoesNotCorrectAPendingStep)
{
	Host host;

	host.step = kHour;
	EXPECT_EQ(host.Tick(1000).event, ClockEvent::kForwardStep);
	/* Read just before the step, observed after it. */
	ClockObservation seen = ObserveClock(host.trust, kRules, kUnix0 + host.boot - 10,
										 host.boot - 10);
	EXPECT_EQ(seen.event, ClockEvent::kNone);
	EXPECT_EQ(seen.trusted_unix_us, kUnix0 + host.boot - 10);
	EXPECT_TRUE(StepPending(host.trust));
}

TEST(ClockSteps, PendingStepIsTrustedUpToWhereIdsReach)
{
	Host host;

	/* Back an hour, set right only after the confirmation: a pending step. */
	host.step = -kHour;
	host.Tick(50000);
	int64_t ids_reach = kUnix0 + host.boot; /* the true time, where IDs were */
	host.Tick(kRules.confirmation_us + kSecond);
	host.step = 0;
	EXPECT_EQ(host.Tick(50000).event, ClockEvent::kForwardStep);
	EXPECT_EQ(TrustUpTo(host.trust, kUnix0 + host.boot, host.boot, ids_reach), ids_reach);
	/* From there on with boot time, the rest of the step still pending. */
	ClockObservation seen = host.Tick(kSecond);
	EXPECT_EQ(seen.event, ClockEvent::kNone);
	EXPECT_EQ(seen.trusted_unix_us, ids_reach + kSecond);
	/* Never past the clock itself. */
	EXPECT_EQ(TrustUpTo(host.trust, kUnix0 + host.boot, host.boot,
						kUnix0 + host.boot + kDay),
			  kUnix0 + host.boot);
}

TEST(ClockSteps, TrustUpToWithoutAPendingStepIsTheClock)
{
	Host host;

	host.Tick(kSecond);
	ClockTrust before = host.trust;
	EXPECT_EQ(TrustUpTo(host.trust, kUnix0 + host.boot, host.boot,
						kUnix0 + host.boot + kDay),
			  kUnix0 + host.boot);
	EXPECT_EQ(host.trust.trusted_offset_us, before.trusted_offset_us);
}

/* Reads served in turn from a script of boot times; the wall clock counts reads. */
struct ScriptedClocks
{
	std::vector<int64_t> boot;
	size_t next_boot = 0;
	int64_t realtime_reads = 0;

	ClockPair Read()
	{
		return ReadClockPair([this] { return kUnix0 + ++realtime_reads; },
							 [this] { return boot.at(next_boot++); });
	}
};

TEST(ClockPair, APreemptionBetweenTheReadsIsReadAgain)
{
	/* 2 ms pass between the first two reads: that pair would be 2 ms off. */
	ScriptedClocks clocks{{1000, 3000, 3010, 3050}};
	ClockPair pair = clocks.Read();

	EXPECT_EQ(pair.realtime_us, kUnix0 + 2);
	EXPECT_EQ(pair.boottime_us, 3050);
	EXPECT_EQ(clocks.next_boot, 4u) << "a narrow pair ends the reads";
}

TEST(ClockPair, AlwaysWideKeepsTheNarrowestPair)
{
	ScriptedClocks clocks{{0, 900, 1000, 1800, 2000, 2200, 3000, 3700, 4000, 4600, 5000,
						   5900, 6000, 6800, 7000, 7500}};
	ClockPair pair = clocks.Read();

	EXPECT_EQ(clocks.realtime_reads, kClockPairTries);
	EXPECT_EQ(pair.realtime_us, kUnix0 + 3);
	EXPECT_EQ(pair.boottime_us, 2200);
}

} /* namespace */
} /* namespace snowflake */
