/*
 * reservation.hpp
 *	  The durable reservation: how far ID timestamps may go, made durable
 *	  before any ID uses it.
 *
 * Reservation: a Unix time R such that no ID with a later timestamp was
 * issued.  It is WAL-logged (so it replicates to physical standbys and is
 * replayed after a crash) and written to $PGDATA/snowflake.reservation
 * (which covers the stretch of WAL that recovery skips, before the last
 * checkpoint) before any slot may use it.  After a start, a crash restart
 * or a promotion, generation resumes from the floor R + 1.
 *
 * It runs snowflake.reserve_ahead past the newest ID, extended by the
 * background worker, so a generating session rarely extends it itself:
 * one small WAL record per reservation period, never one per ID.
 */
#ifndef SNOWFLAKE_PG_RESERVATION_HPP
#define SNOWFLAKE_PG_RESERVATION_HPP

#include "pg/data_directory.hpp"	/* kReservationFileName */
#include "pg/settings.hpp"
#include "pg/shared_state.hpp"

/*
 * How far past the wall clock the IDs of snowflake 1.0 could reach (its
 * largest max_drift): a layout file without a reservation file means 1.0
 * last ran here.  kMaxReachAheadMs would be as safe but would keep
 * generation waiting for the clock for a day after such an upgrade.
 */
constexpr int64 kVersion10ReachAheadMs = 60000;

/*
 * Reads $PGDATA/snowflake.reservation into "unix_ms".  False if there is no
 * such file; FATAL (SQLSTATE XX001) if its content is malformed or not a
 * possible reservation for the running layout.
 */
bool		ReadReservationFile(int64 *unix_ms);

/* Sets up the reservation's fields of new shared memory, from the file. */
void		InitReservationState(SharedState *state);

/*
 * The latest Unix time (ms) the timestamp of an ID issued before this run
 * of the server can have (core/reach_ahead.hpp), from its shared state.
 */
int64		EarlierIdsReachUnixMs(SharedState *state);

/*
 * The postmaster's on_shmem_exit callback: at a normal exit the slots hold
 * the last IDs really issued; records the newest one's timestamp.
 */
void		RecordIssuedAtExit(int code, Datum arg);

/*
 * Redo of a reservation record: raises the reservation to "until_unix_ms",
 * or to the layout's last millisecond (with a WARNING) if that lies past it.
 */
void		ReplayReservation(int64 until_unix_ms);

/* The reservation, in ms since the layout's epoch: the hot path's limit. */
inline int64
ReservedUntil(SharedState *state)
{
	return static_cast<int64>(pg_atomic_read_u64(&state->reserved_until));
}

/*
 * Makes timestamps up to at least "needed" (ms since the layout's epoch)
 * durable; if that takes a new record, it reserves up to "wanted" (not
 * below "needed"), both lowered to the layout's last millisecond.  Not
 * during recovery.
 */
void		ExtendReservation(SharedState *state, int64 needed, int64 wanted);

/*
 * The generation floor: the lowest timestamp any slot may issue in this
 * run, one past the reservation recovered at start-up or promotion (with
 * none recorded, the start time, or one past the start time +
 * kVersion10ReachAheadMs if IDs may have been issued here).  Fixes it
 * first if need be (FixFloorLocked in reservation.cpp); ERROR if a file
 * cannot be written, and the next caller tries again.  After recovery.
 */
int64		FixGenerationFloor(SharedState *state);

/*
 * The floor if it is fixed already; otherwise a lower bound for it (the
 * current time), usable during recovery.
 */
int64		GenerationFloorOrNow(SharedState *state);

#endif							/* SNOWFLAKE_PG_RESERVATION_HPP */
