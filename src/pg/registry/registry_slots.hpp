/*
 * registry_slots.hpp
 *	  The shared record of the node registries (SharedState::registries):
 *	  one slot per database whose registry runs or is being started, the
 *	  launcher's pid and problem, and the requests to probe a database
 *	  again.  In named mode the static registry has slot 0.
 *
 * Who writes what (all under registry_mutex):
 *	- The launcher takes a free slot for a database (kRegistryStarting),
 *	  frees a stopped one, and writes launcher_pid and launcher_problem.
 *	- A registry worker writes its own slot: its pid, kRegistryRunning once
 *	  it found the extension, kRegistryStopped at its exit, absent,
 *	  collision, last_round and problem.
 *	- A backend whose CREATE or ALTER EXTENSION snowflake committed, or
 *	  whose first ID or lease finds no registry for its database, appends
 *	  a probe request; DROP DATABASE (not of the session's own database or
 *	  a template) sets dropping and its transaction id and signals the
 *	  worker.
 */
#ifndef SNOWFLAKE_PG_REGISTRY_SLOTS_HPP
#define SNOWFLAKE_PG_REGISTRY_SLOTS_HPP

#include "pg/shared_state.hpp"

/* snowflake.database is '': a registry in every database with the extension. */
bool RegistryIsAutomatic(void);

/* Sets up the registry slots of freshly created shared memory. */
void InitRegistrySlots(SharedState *state);

/* Sets the launcher's latch, if a launcher runs. */
void WakeRegistryLauncher(SharedState *state);

/*
 * Asks the launcher to probe "database" again: the extension was created
 * or updated there and the transaction committed.
 */
void RequestRegistryProbe(Oid database, bool whatever_flags);

/*
 * At a session's first ID or lease (automatic mode): refuses a template,
 * and asks for a probe if no registry runs or starts here.  Once per
 * session: nothing on the hot path.
 */
void RequestRegistryOnceIfMissing(void);

/* ERROR (55000) in a template database: no registry runs there. */
void RefuseInTemplateDatabase(void);

/* Asks the registry of "database" to exit, and waits up to 5 s (README.md). */
void StopRegistryOfDatabase(Oid database);

/*
 * Sets registry_findings to the union of the registries' findings (a
 * node-id collision, a clock skew of a running registry), after a
 * registry's slot stopped counting (its database lost the extension, or
 * is gone) or a registry compared clocks.
 */
void RecomputeRegistryFindings(SharedState *state);

/*
 * What snowflake_status() shows: the oldest last round among the starting
 * and running registries, one that has completed none counting from its
 * start (0: none), and their problems and the
 * launcher's, each naming its database (NULL: none).
 */
TimestampTz RegistryStatus(SharedState *state, char **problems);

#endif /* SNOWFLAKE_PG_REGISTRY_SLOTS_HPP */
