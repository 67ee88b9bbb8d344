/*
 * clock_watch.cpp
 *	  Observing wall-clock steps in shared memory, and logging them.
 */
extern "C"
{
#include "postgres.h"

#include "miscadmin.h" /* IsUnderPostmaster */
#include "port/atomics.h"
#include "storage/ipc.h" /* on_shmem_exit */
#include "storage/spin.h"
#include "utils/timestamp.h" /* timestamptz_to_str */
}

#include <cstdio>
#include <cstdlib>

#include "core/clock_steps.hpp"
#include "pg/clock_watch.hpp"
#include "pg/data_directory.hpp"
#include "pg/durable_file.hpp"
#include "pg/settings.hpp"
#include "pg/shared_state.hpp"
#include "pg/timestamps.hpp"

/* Far enough back that the first read compares, and "now - it" cannot overflow. */
int64_t g_clock_compared_ms = -(INT64CONST(1) << 62);

/* The postmaster's copy of the trust at a crash restart (see InitClockWatch). */
static snowflake::ClockTrust kept_trust;
static bool trust_kept = false;

/* Fields of snowflake.clock: the boot, then the ClockTrust's. */
constexpr int kClockFileFields = 9;

/*
 * This boot of the machine, as a positive number (the first 15 hex digits
 * of the kernel's boot id), or -1 if unknown.  Boot time is comparable only
 * within one boot.
 */
static int64
BootKey(void)
{
	char text[64] = {0};
	FILE *file = fopen("/proc/sys/kernel/random/boot_id", "r");
	int64 key = -1;

	if (file == nullptr)
		return -1;
	if (fgets(text, sizeof(text), file) != nullptr)
	{
		char digits[16] = {0};
		int n = 0;

		for (const char *c = text; *c && n < 15; c++)
			if ((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f'))
				digits[n++] = *c;
		if (n == 15)
			key = static_cast<int64>(strtoll(digits, nullptr, 16));
	}
	fclose(file);
	return key;
}

/* kNoBootTime is negative; the file holds -1 for it. */
static int64
ToField(int64 boot_us)
{
	return boot_us == snowflake::kNoBootTime ? -1 : boot_us;
}

static int64
FromField(int64 field)
{
	return field < 0 ? snowflake::kNoBootTime : field;
}

/* Records the trust in snowflake.clock; a failure only costs a LOG line. */
static void
SaveClockTrust(const snowflake::ClockTrust &trust)
{
	char path[MAXPGPATH];
	int64 key = BootKey();
	int64 values[kClockFileFields] = {key,
									  trust.trusted_offset_us,
									  trust.last_boot_us,
									  trust.pending_offset_us,
									  ToField(trust.pending_since_us),
									  trust.before_back_offset_us,
									  ToField(trust.back_since_us),
									  trust.window_offset_us,
									  trust.window_since_us};

	if (key < 0)
		return;
	DataDirectoryFile(kClockFileName, path);
	(void) WriteStateFile(path, values, kClockFileFields, LOG);
}

/* The trust snowflake.clock recorded on this boot, if any. */
static bool
LoadClockTrust(snowflake::ClockTrust *trust)
{
	char path[MAXPGPATH];
	int64 values[kClockFileFields];
	int64 key = BootKey();
	const char *hint = "Remove the file: the server then trusts the clock as it starts.";

	DataDirectoryFile(kClockFileName, path);
	if (key < 0 || !ReadStateFile(path, "clock record", values, kClockFileFields, hint))
		return false;
	if (values[0] != key)
		return false; /* another boot, or another machine */

	/* Boot times of this boot lie in its past: a later one never comes. */
	int64 boot_now = NowBootUs();

	static const int boot_fields[] = {2, 4, 6, 8};

	for (int field : boot_fields)
		if (values[field] > boot_now)
		{
			char detail[kStateProblemSize];

			snprintf(detail, sizeof(detail),
					 "Field %d, a boot time of " INT64_FORMAT " us, lies after the "
					 "current boot time, " INT64_FORMAT " us.",
					 field + 1, values[field], boot_now);
			ReportCorruptStateFile(path, "clock record", detail, hint);
		}
	*trust = snowflake::ClockTrust{values[1], values[2],
								   values[3], FromField(values[4]),
								   values[5], FromField(values[6]),
								   values[7], values[8]};
	return true;
}

static void
KeepClockTrustAtExit(int code, Datum arg)
{
	SharedState *state = reinterpret_cast<SharedState *>(DatumGetPointer(arg));

	/*
	 * Every other process has exited; no lock: one killed while holding
	 * clock_mutex would leave the postmaster spinning on it into a PANIC.
	 */
	kept_trust = state->clock_trust;
	trust_kept = true;
	/* A normal exit: the next start on this boot continues from it. */
	if (code == 0)
		SaveClockTrust(kept_trust);
}

void
InitClockWatch(SharedState *state)
{
	SpinLockInit(&state->clock_mutex);
	if (!trust_kept && !LoadClockTrust(&state->clock_trust))
	{
		snowflake::ClockPair now = snowflake::ReadClockPair(NowUnixUs, NowBootUs);

		state->clock_trust = snowflake::TrustClock(now.realtime_us, now.boottime_us);
	}
	else if (trust_kept)
		state->clock_trust = kept_trust;
	pg_atomic_init_u64(&state->clock_steps_forward, 0);
	pg_atomic_init_u64(&state->largest_step_forward_ms, 0);
	pg_atomic_init_u64(&state->last_clock_step_unix_ms, 0);
	/* Runs in the postmaster before the memory of a crash restart goes. */
	if (!IsUnderPostmaster)
		on_shmem_exit(KeepClockTrustAtExit, PointerGetDatum(state));
}

static void
RaiseTo(pg_atomic_uint64 *value, uint64 candidate)
{
	uint64 current = pg_atomic_read_u64(value);

	while (current < candidate &&
		   !pg_atomic_compare_exchange_u64(value, &current, candidate))
		;
}

/* Logs and counts an event; outside the spinlock. */
static void
ReportClockEvent(SharedState *state, const snowflake::ClockObservation &seen)
{
	int64 step_ms = seen.step_us / 1000;
	int64 trusted_ms = seen.trusted_unix_us / 1000;

	switch (seen.event)
	{
		case snowflake::ClockEvent::kNone:
			return;
		case snowflake::ClockEvent::kForwardStep:
			pg_atomic_fetch_add_u64(&state->clock_steps_forward, 1);
			RaiseTo(&state->largest_step_forward_ms, static_cast<uint64>(step_ms));
			pg_atomic_write_u64(&state->last_clock_step_unix_ms,
								static_cast<uint64>(trusted_ms));
			ereport(
				WARNING,
				(errmsg("snowflake: the system clock stepped forward by " INT64_FORMAT
						" ms",
						step_ms),
				 errdetail("IDs, leases and the reservation keep to the clock before the "
						   "step (now %s) until the step has lasted "
						   "snowflake.clock_step_confirmation (%d ms).",
						   timestamptz_to_str(UnixMsToTimestampTz(trusted_ms)),
						   g_settings.clock_step_confirmation_ms),
				 errhint("Nothing needs to be done: if time synchronization corrects the "
						 "clock within the confirmation, no ID uses the step; if the step "
						 "was right, IDs follow it once it is confirmed.")));
			return;
		case snowflake::ClockEvent::kStepAccepted:
			ereport(
				LOG,
				(errmsg("snowflake: the forward step of the system clock by " INT64_FORMAT
						" ms lasted snowflake.clock_step_confirmation; IDs follow it now",
						step_ms)));
			return;
		case snowflake::ClockEvent::kStepCorrected:
			ereport(LOG,
					(errmsg(
						"snowflake: the forward step of the system clock was corrected; "
						"no ID used it")));
			return;
		case snowflake::ClockEvent::kBackStep:
			pg_atomic_fetch_add_u64(&state->clock_steps_back, 1);
			RaiseTo(&state->largest_step_back_ms, static_cast<uint64>(step_ms));
			pg_atomic_write_u64(&state->last_clock_step_unix_ms,
								static_cast<uint64>(trusted_ms));
			ereport(LOG,
					(errmsg("snowflake: the system clock stepped back by " INT64_FORMAT
							" ms",
							step_ms)));
			return;
	}
}

int64_t
ObserveClockUs(int64_t ids_reach_unix_us)
{
	SharedState *state = SharedStateIfAttached();

	if (state == nullptr)
		return NowUnixUs();

	snowflake::ClockPair now = snowflake::ReadClockPair(NowUnixUs, NowBootUs);
	int64 realtime_us = now.realtime_us;
	int64 boottime_us = now.boottime_us;
	snowflake::ClockStepRules rules{int64{g_settings.clock_step_threshold_ms} * 1000,
									int64{g_settings.clock_step_confirmation_ms} * 1000};

	SpinLockAcquire(&state->clock_mutex);
	snowflake::ClockObservation seen = snowflake::ObserveClock(state->clock_trust, rules,
															   realtime_us, boottime_us);

	if (ids_reach_unix_us != kIdsReachNowhere)
		seen.trusted_unix_us = snowflake::TrustUpTo(state->clock_trust, realtime_us,
													boottime_us, ids_reach_unix_us);
	bool pending = snowflake::StepPending(state->clock_trust);
	snowflake::ClockTrust trust = state->clock_trust;

	SpinLockRelease(&state->clock_mutex);

	/* A step changes what a restart on this boot must trust. */
	if (seen.event != snowflake::ClockEvent::kNone)
		SaveClockTrust(trust);

	g_clock_compared_ms = pending ? -(INT64CONST(1) << 62) : realtime_us / 1000;
	ReportClockEvent(state, seen);
	return seen.trusted_unix_us;
}

int64_t
PeekTrustedNowUnixMs(void)
{
	SharedState *state = SharedStateIfAttached();

	if (state == nullptr)
		return NowUnixMs();

	SpinLockAcquire(&state->clock_mutex);
	bool pending = snowflake::StepPending(state->clock_trust);
	int64 trusted_offset_us = state->clock_trust.trusted_offset_us;

	SpinLockRelease(&state->clock_mutex);
	/* While a step is pending the trusted time is the boot time plus the offset before it. */
	return pending ? (NowBootUs() + trusted_offset_us) / 1000 : NowUnixMs();
}

int64_t
PendingClockStepMs(SharedState *state)
{
	int64 step_ms = -1;

	SpinLockAcquire(&state->clock_mutex);
	if (snowflake::StepPending(state->clock_trust))
		step_ms = (state->clock_trust.pending_offset_us -
				   state->clock_trust.trusted_offset_us) /
			1000;
	SpinLockRelease(&state->clock_mutex);
	return step_ms;
}
