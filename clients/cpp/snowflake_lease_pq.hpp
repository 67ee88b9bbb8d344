/*
 * snowflake_lease_pq.hpp
 *	  Snowflake IDs generated in the application, under a worker id leased
 *	  from the database: the libpq part.
 *
 * Header-only, C++17; link with -lpq -pthread.  Lease::Acquire() takes a
 * worker id with snowflake_lease_worker(), a background thread renews it
 * with snowflake_renew_lease() every renew_interval, and Release() (or the
 * destructor) hands it back with snowflake_release_lease().  The IDs come
 * from the Generator of snowflake_lease.hpp, in process, without a round
 * trip.
 *
 * The connection: libpq connections are not thread-safe, so one thread at
 * a time uses it: the caller of Acquire(), then the renewer thread alone,
 * then, once the renewer has been stopped and joined, Release().  The
 * renewals and the release run in autocommit mode (libpq's default).  The
 * grant may run inside a transaction, a cursor or a pipeline too
 * (LeaseOptions::acquire_in): since snowflake 1.5 a grant, renewal or
 * release is not transactional, so a ROLLBACK or a failing statement after
 * it in the same transaction or pipeline does not undo it, and the lease
 * the client read stays granted.
 *
 * Renewal outcomes (FailureLosesLease()):
 * - success: not_after moves to what the server returned.
 * - SQLSTATE 55000: the lease is lost (expired and granted again, released,
 *	 or held by another connection): generation stops for good.
 * - a broken connection under a connection-scoped lease: the server frees
 *	 the worker id when the connection ends, so the lease is lost too.
 * - anything else (a broken connection under a time-scoped lease, which is
 *	 reset; 57014, a cancelled statement; a refused client clock...):
 *	 transient.  IDs continue up to not_after and the renewal is retried,
 *	 every second at most.
 *
 * A cancelled wait for the synchronous standbys: with synchronous standbys
 * (synchronous_standby_names, whatever the session's synchronous_commit)
 * each lease function waits until they confirm its change.  A cancel
 * (pg_cancel_backend(), a client's cancel) during that wait ends the call
 * with ERROR 57014 ("canceling statement due to user request"), a
 * termination with FATAL 57P01 and the connection; the change has been made
 * on the primary, but is not known to be on a standby, and a failover may
 * lose it.  So:
 * - Acquire() fails with that error and closes the connection.  The client
 *	 never read the grant: a connection-scoped one ends with the
 *	 connection; a time-scoped one cannot be released without its token,
 *	 and stays until its ttl runs out (its worker id is then leased again,
 *	 above its whole window).
 * - a renewal is transient: not_after stays where the last renewal the
 *	 client read put it, and the renewal is retried.
 * - Release() fails with the error (the lease is not lost): a release
 *	 that may be lost in a failover is harmless, the lease then ends by
 *	 expiry or with its connection, which Release() closes.
 * Servers before 1.5 committed the lease functions' transactions with
 * synchronous_commit = on and reported a cancelled wait with a WARNING only
 * (IsSyncRepCancelNotice()); SyncRepWatch still catches it, and then
 * Acquire() releases the lease it does not use, best-effort, and fails with
 * SQLSTATE 01000, a renewal is transient (01000), and Release() reports
 * what the server answered with a 01000 note in *error.
 */
#ifndef SNOWFLAKE_LEASE_PQ_HPP
#define SNOWFLAKE_LEASE_PQ_HPP

#include <cerrno>
#include <cstdlib>
#include <functional>
#include <memory>

#include <libpq-fe.h>

#include "snowflake_lease.hpp"

namespace snowflake_lease {

/* A failed call: the server's SQLSTATE (empty if there is none) and message. */
struct Error
{
	std::string sqlstate;
	std::string message;

	std::string ToString() const
	{
		return sqlstate.empty() ? message : "SQLSTATE " + sqlstate + ": " + message;
	}
};

/*
 * How Acquire() runs the grant's statement.  Every way gives a lease that
 * stays granted (snowflake 1.5: the lease functions are not transactional);
 * the ways other than kAutocommit show it, as an application that leases
 * inside its own transaction or pipeline would.
 */
enum class AcquireIn
{
	kAutocommit,			/* the statement alone */
	kRolledBackTransaction, /* BEGIN; the statement; ROLLBACK */
	kRolledBackCursor,		/* BEGIN; DECLARE CURSOR FOR it; FETCH 1; ROLLBACK */
	kFailedPipeline,		/* a pipeline: it, then a statement that fails; Sync */
};

struct LeaseOptions
{
	std::string conninfo; /* libpq connection string or URI */
	std::string holder;   /* who holds it, e.g. DefaultHolder("app") */
	/* The lease's time to live; none: held while the connection lives. */
	std::optional<int64_t> ttl_seconds;
	/* How far an ID may run ahead of the clock when a ms is used up. */
	int64_t max_drift_ms = 0;
	/* The clock; nullptr: the system clock shifted by clock_offset_ms. */
	Clock *clock = nullptr;
	int64_t clock_offset_ms = 0;
	/* Called on the renewer thread after each transient renewal failure. */
	std::function<void(const Error &)> on_renew_error;
	/* How the grant's statement runs. */
	AcquireIn acquire_in = AcquireIn::kAutocommit;
};

/*
 * Catches, on one connection, the warning of a cancelled wait for
 * synchronous replication (IsSyncRepCancelNotice()), and passes every
 * notice on to libpq's default receiver, which prints it on stderr.
 * Clear() before a call, seen() after it.  The thread that uses the
 * connection is the one that receives its notices, so no lock is needed.
 */
class SyncRepWatch
{
public:
	explicit SyncRepWatch(PGconn *conn) : next_(PQsetNoticeReceiver(conn, &Receive, this))
	{
	}

	SyncRepWatch(const SyncRepWatch &) = delete;
	SyncRepWatch &operator=(const SyncRepWatch &) = delete;

	void Clear()
	{
		seen_ = false;
		text_.clear();
	}
	bool seen() const { return seen_; }
	/* If seen(): the error of a call whose change, what, may be lost. */
	Error NotReplicated(const char *what) const
	{
		return Error{"01000",
					 std::string(what) +
						 " is not known to be replicated to the synchronous standby (" +
						 text_ + ")"};
	}

private:
	static void Receive(void *arg, const PGresult *res)
	{
		SyncRepWatch *self = static_cast<SyncRepWatch *>(arg);
		const char *message = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);

		if (!self->seen_ &&
			IsSyncRepCancelNotice(message,
								  PQresultErrorField(res, PG_DIAG_SOURCE_FUNCTION)))
		{
			self->seen_ = true;
			self->text_ = message ? message :
									"the wait for synchronous replication was cancelled";
		}
		/* libpq's default receiver, which takes no argument. */
		if (self->next_)
			self->next_(nullptr, res);
	}

	PQnoticeReceiver next_;
	bool seen_ = false;
	std::string text_;
};

class Lease
{
public:
	/*
	 * Connects and takes a lease.  nullptr on failure, with *error set
	 * (SQLSTATE 08001 when the connection could not be made, 57014 when the
	 * call, or its wait for the synchronous standbys, was cancelled, 01000
	 * when a server before 1.5 reported a cancelled wait for synchronous
	 * replication: see the top).
	 */
	static std::unique_ptr<Lease> Acquire(const LeaseOptions &options, Error *error)
	{
		static const char *const kLeaseSql =
			"SELECT worker_id, node_id, token, "
			"(extract(epoch FROM not_before) * 1000)::bigint, "
			"(extract(epoch FROM not_after) * 1000)::bigint, "
			"(extract(epoch FROM epoch) * 1000)::bigint, "
			"node_bits, worker_bits, sequence_bits, "
			"(extract(epoch FROM renew_interval) * 1000)::bigint, "
			"expires_at IS NULL "
			"FROM snowflake_lease_worker($1::text, $2::interval, $3::timestamptz)";
		PGconn *conn = PQconnectdb(options.conninfo.c_str());

		if (conn == nullptr || PQstatus(conn) != CONNECTION_OK)
		{
			error->sqlstate = "08001";
			error->message = conn ? Trim(PQerrorMessage(conn)) : "out of memory";
			PQfinish(conn);
			return nullptr;
		}

		std::unique_ptr<SyncRepWatch> watch(new SyncRepWatch(conn));
		std::unique_ptr<Clock> own_clock;
		Clock *clock = options.clock;

		if (clock == nullptr)
		{
			own_clock.reset(new SystemClock(options.clock_offset_ms));
			clock = own_clock.get();
		}

		std::string ttl;
		std::string now = FormatUnixMs(clock->NowMs());

		if (options.ttl_seconds)
			ttl = std::to_string(static_cast<long long>(*options.ttl_seconds)) + " seconds";

		const char *values[3] = {options.holder.c_str(),
								 options.ttl_seconds ? ttl.c_str() : nullptr, now.c_str()};
		PGresult *res = RunGrant(conn, options.acquire_in, kLeaseSql, values);
		Grant grant;
		bool granted = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 &&
			PQnfields(res) == 11 && ParseGrant(res, &grant);
		std::string why;

		if (watch->seen())
			*error = watch->NotReplicated("the lease, which is not used,");
		else if (PQresultStatus(res) != PGRES_TUPLES_OK)
			*error = ResultError(conn, res);
		else if (!granted)
			*error = Error{"", "snowflake_lease_worker() returned an unexpected result"};
		else if (!ValidGrant(grant, &why))
			*error = Error{"", "the server granted an unusable lease: " + why};
		else
		{
			PQclear(res);
			return std::unique_ptr<Lease>(new Lease(conn, std::move(watch), grant,
													std::move(own_clock), clock, options));
		}
		PQclear(res);
		/* A lease that is not used is handed back. */
		if (granted)
			ReleaseQuiet(conn, grant.token);
		PQfinish(conn);
		return nullptr;
	}

	Lease(const Lease &) = delete;
	Lease &operator=(const Lease &) = delete;

	/* Releases the lease if neither Release() nor Abandon() did. */
	~Lease()
	{
		if (!done_)
		{
			bool released;
			Error error;

			Release(&released, &error);
		}
		StopRenewer();
		if (conn_)
			PQfinish(conn_);
	}

	const Grant &grant() const { return grant_; }
	Generator &generator() { return generator_; }

	/* The next ID; see Generator::Next().  Thread-safe. */
	Status Next(int64_t *id, int64_t timeout_ms = -1)
	{
		return generator_.Next(id, timeout_ms);
	}

	std::optional<int64_t> LastId() const { return generator_.LastId(); }
	int64_t NotAfterMs() const { return generator_.NotAfterMs(); }
	bool Lost() const { return generator_.Lost(); }
	std::string LostReason() const { return generator_.LostReason(); }
	uint64_t Renewals() const { return renewals_.load(); }

	/*
	 * Stops generation and the renewer, then releases the lease on the
	 * server with the last ID issued, and closes the connection.  True if
	 * the call went through, *released saying what the server answered
	 * (and *error, if set, a note that the release is not known to be
	 * replicated, SQLSTATE 01000: harmless, see the top); false with
	 * *error if the call failed, and Lost() then says whether the lease was
	 * lost (before or by the call).  Once only; no ID after it.
	 */
	bool Release(bool *released, Error *error)
	{
		*released = false;
		if (done_)
		{
			*error = Error{"", "the lease was already released or abandoned"};
			return false;
		}
		done_ = true;
		generator_.Close();
		StopRenewer();
		if (generator_.Lost())
		{
			*error = Error{"55000", generator_.LostReason()};
			Disconnect();
			return false;
		}

		std::optional<int64_t> last = generator_.LastId();
		std::string token = std::to_string(static_cast<long long>(grant_.token));
		std::string last_text = last ? std::to_string(static_cast<long long>(*last)) : "";
		const char *values[2] = {token.c_str(), last ? last_text.c_str() : nullptr};

		watch_->Clear();

		PGresult *res =
			PQexecParams(conn_, "SELECT snowflake_release_lease($1::bigint, $2::bigint)", 2,
						 nullptr, values, nullptr, nullptr, 0);
		bool ok = false;

		if (PQresultStatus(res) != PGRES_TUPLES_OK)
		{
			*error = ResultError(conn_, res);
			/* As in RenewOnce(): these mean the lease was lost. */
			if (FailureLosesLease(error->sqlstate, grant_.connection_scoped,
								  PQstatus(conn_) == CONNECTION_OK))
			{
				if (error->sqlstate != "55000")
					error->message = "connection lost: " + error->message;
				generator_.MarkLost(error->ToString());
			}
		}
		else if (PQntuples(res) != 1 || PQnfields(res) != 1)
			*error = Error{"", "snowflake_release_lease() returned an unexpected result"};
		else
		{
			*released = !PQgetisnull(res, 0, 0) && PQgetvalue(res, 0, 0)[0] == 't';
			ok = true;
			if (watch_->seen())
				*error = watch_->NotReplicated("the release");
		}
		PQclear(res);
		Disconnect();
		return ok;
	}

	/*
	 * Stops generation and the renewer and closes the connection without
	 * releasing: a time-scoped lease stays until it expires, a
	 * connection-scoped one ends with the connection.
	 */
	void Abandon()
	{
		if (done_)
			return;
		done_ = true;
		generator_.Close();
		StopRenewer();
		Disconnect();
	}

private:
	enum class Renewal
	{
		kRenewed,
		kLost,
		kTransient,
	};

	Lease(PGconn *conn, std::unique_ptr<SyncRepWatch> watch, const Grant &grant,
		  std::unique_ptr<Clock> own_clock, Clock *clock, const LeaseOptions &options)
		: conn_(conn), watch_(std::move(watch)), grant_(grant),
		  own_clock_(std::move(own_clock)), clock_(clock),
		  generator_(grant, *clock, options.max_drift_ms),
		  on_renew_error_(options.on_renew_error)
	{
		renewer_ = std::thread([this] { RenewLoop(); });
	}

	void RenewLoop()
	{
		using Steady = std::chrono::steady_clock;
		const int64_t interval = std::max<int64_t>(1, grant_.renew_interval_ms);
		const int64_t retry = std::min<int64_t>(interval, 1000);
		Steady::time_point next = Steady::now() + std::chrono::milliseconds(interval);

		for (;;)
		{
			{
				std::unique_lock<std::mutex> lock(stop_mutex_);

				if (stop_cv_.wait_until(lock, next, [this] { return stop_; }))
					return;
			}

			int64_t not_after = 0;
			Error error;

			switch (RenewOnce(&not_after, &error))
			{
				case Renewal::kRenewed:
					generator_.ExtendWindow(not_after);
					renewals_++;
					next = Steady::now() + std::chrono::milliseconds(interval);
					break;
				case Renewal::kLost:
					generator_.MarkLost(error.ToString());
					return;
				case Renewal::kTransient:
					if (on_renew_error_)
						on_renew_error_(error);
					next = Steady::now() + std::chrono::milliseconds(retry);
					break;
			}
		}
	}

	Renewal RenewOnce(int64_t *not_after, Error *error)
	{
		static const char *const kRenewSql =
			"SELECT (extract(epoch FROM not_after) * 1000)::bigint "
			"FROM snowflake_renew_lease($1::bigint, $2::bigint, $3::timestamptz)";

		if (PQstatus(conn_) != CONNECTION_OK)
		{
			if (grant_.connection_scoped)
			{
				*error = Error{"08006", "connection lost: " + Trim(PQerrorMessage(conn_))};
				return Renewal::kLost;
			}
			PQreset(conn_);
			if (PQstatus(conn_) != CONNECTION_OK)
			{
				*error = Error{"08001", Trim(PQerrorMessage(conn_))};
				return Renewal::kTransient;
			}
		}

		std::optional<int64_t> last = generator_.LastId();
		std::string token = std::to_string(static_cast<long long>(grant_.token));
		std::string last_text = last ? std::to_string(static_cast<long long>(*last)) : "";
		std::string now = FormatUnixMs(clock_->NowMs());
		const char *values[3] = {token.c_str(), last ? last_text.c_str() : nullptr,
								 now.c_str()};

		watch_->Clear();

		PGresult *res = PQexecParams(conn_, kRenewSql, 3, nullptr, values, nullptr, nullptr,
									 0);
		Renewal outcome = Renewal::kTransient;

		if (PQresultStatus(res) == PGRES_TUPLES_OK)
		{
			/* Not known to be replicated: not_after stays, a retry follows. */
			if (watch_->seen())
				*error = watch_->NotReplicated("the renewal");
			else if (PQntuples(res) == 1 && PQnfields(res) == 1 &&
					 !PQgetisnull(res, 0, 0) && ParseInt(PQgetvalue(res, 0, 0), not_after))
				outcome = Renewal::kRenewed;
			else
				*error = Error{"", "snowflake_renew_lease() returned an unexpected result"};
		}
		else
		{
			*error = ResultError(conn_, res);
			if (FailureLosesLease(error->sqlstate, grant_.connection_scoped,
								  PQstatus(conn_) == CONNECTION_OK))
			{
				if (error->sqlstate != "55000")
					error->message = "connection lost: " + error->message;
				outcome = Renewal::kLost;
			}
		}
		PQclear(res);
		return outcome;
	}

	void StopRenewer()
	{
		{
			std::lock_guard<std::mutex> lock(stop_mutex_);

			stop_ = true;
		}
		stop_cv_.notify_all();
		if (renewer_.joinable())
			renewer_.join();
	}

	void Disconnect()
	{
		if (conn_)
			PQfinish(conn_);
		conn_ = nullptr;
	}

	/* The text on one line, without a trailing newline (libpq's are multi-line). */
	static std::string Trim(const char *text)
	{
		std::string s;
		bool break_pending = false;

		for (const char *c = text ? text : ""; *c; c++)
		{
			if (*c == '\n' || *c == '\r')
				break_pending = true;
			else if (break_pending && (*c == ' ' || *c == '\t'))
				continue;
			else
			{
				if (break_pending && !s.empty())
					s += ' ';
				break_pending = false;
				s += *c;
			}
		}
		while (!s.empty() && s.back() == ' ')
			s.pop_back();
		return s;
	}

	static Error ResultError(PGconn *conn, const PGresult *res)
	{
		Error error;
		const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : nullptr;
		const char *primary = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) :
									nullptr;

		if (state)
			error.sqlstate = state;
		else if (PQstatus(conn) != CONNECTION_OK)
			error.sqlstate = "08006";
		error.message = primary ? Trim(primary) : Trim(PQerrorMessage(conn));
		if (error.message.empty() && res)
			error.message = Trim(PQresultErrorMessage(res));
		if (error.message.empty())
			error.message = "unknown error";
		return error;
	}

	static bool ParseInt(const char *text, int64_t *value)
	{
		char *end;

		errno = 0;
		long long v = strtoll(text, &end, 10);

		if (errno != 0 || end == text || *end != '\0')
			return false;
		*value = v;
		return true;
	}

	static bool ParseGrant(const PGresult *res, Grant *grant)
	{
		int64_t v[10];

		for (int i = 0; i < 10; i++)
			if (PQgetisnull(res, 0, i) || !ParseInt(PQgetvalue(res, 0, i), &v[i]))
				return false;
		if (v[0] < 0 || v[0] > UINT32_MAX || v[1] < 0 || v[1] > UINT32_MAX)
			return false;
		grant->worker_id = static_cast<uint32_t>(v[0]);
		grant->node_id = static_cast<uint32_t>(v[1]);
		grant->token = v[2];
		grant->not_before_ms = v[3];
		grant->not_after_ms = v[4];
		grant->layout.epoch_ms = v[5];
		grant->layout.node_bits = static_cast<int>(v[6]);
		grant->layout.worker_bits = static_cast<int>(v[7]);
		grant->layout.sequence_bits = static_cast<int>(v[8]);
		grant->renew_interval_ms = v[9];
		grant->connection_scoped = !PQgetisnull(res, 0, 10) &&
			PQgetvalue(res, 0, 10)[0] == 't';
		return true;
	}

	/* Runs sql (no result wanted); false, with its result in *error_res, if it failed. */
	static bool Exec(PGconn *conn, const char *sql, PGresult **error_res)
	{
		PGresult *res = PQexec(conn, sql);
		ExecStatusType status = PQresultStatus(res);

		if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK)
		{
			PQclear(res);
			return true;
		}
		*error_res = res;
		return false;
	}

	/*
	 * Runs the grant's statement "sql" with "values" as "how" says; the
	 * statement's result (which the caller clears), or the first error's.
	 * A statement after the grant that fails, or a ROLLBACK, does not undo
	 * the grant (see the top); a failure of a BEGIN or a DECLARE before it
	 * means there is none.
	 */
	static PGresult *RunGrant(PGconn *conn, AcquireIn how, const char *sql,
							  const char *const values[3])
	{
		PGresult *error_res = nullptr;

		switch (how)
		{
			case AcquireIn::kAutocommit:
				break;
			case AcquireIn::kRolledBackTransaction:
			case AcquireIn::kRolledBackCursor:
				{
					if (!Exec(conn, "BEGIN", &error_res))
						return error_res;

					PGresult *res;

					if (how == AcquireIn::kRolledBackTransaction)
						res = PQexecParams(conn, sql, 3, nullptr, values, nullptr, nullptr, 0);
					else
					{
						std::string declare =
							std::string("DECLARE snowflake_lease_grant NO SCROLL CURSOR FOR ") +
							sql;

						res = PQexecParams(conn, declare.c_str(), 3, nullptr, values, nullptr,
										   nullptr, 0);
						if (PQresultStatus(res) == PGRES_COMMAND_OK)
						{
							PQclear(res);
							res = PQexec(conn, "FETCH 1 FROM snowflake_lease_grant");
						}
					}
					/* Rolled back whatever happened; a failed ROLLBACK is reported. */
					if (!Exec(conn, "ROLLBACK", &error_res) &&
						PQresultStatus(res) == PGRES_TUPLES_OK)
					{
						PQclear(res);
						return error_res;
					}
					PQclear(error_res);
					return res;
				}
			case AcquireIn::kFailedPipeline:
				return RunGrantInPipeline(conn, sql, values);
		}
		return PQexecParams(conn, sql, 3, nullptr, values, nullptr, nullptr, 0);
	}

	/*
	 * The grant's statement, then "SELECT 1/0", in one pipeline (so in one
	 * implicit transaction, which the second statement's error aborts), then
	 * a Sync.  The grant's result, or its error; the second statement's
	 * division by zero is expected and dropped.
	 */
	static PGresult *RunGrantInPipeline(PGconn *conn, const char *sql,
										const char *const values[3])
	{
		if (PQenterPipelineMode(conn) != 1)
			return nullptr;

		PGresult *grant_res = nullptr;
		/* Pipeline mode needs the extended protocol: ...Params for both. */
		bool sent = PQsendQueryParams(conn, sql, 3, nullptr, values, nullptr, nullptr, 0);

		sent = sent &&
			PQsendQueryParams(conn, "SELECT 1/0", 0, nullptr, nullptr, nullptr, nullptr, 0);
		sent = sent && PQpipelineSync(conn);

		if (sent)
		{
			/* Each statement's results end with a null; then the Sync's. */
			for (int statement = 0; statement < 2; statement++)
				for (PGresult *res; (res = PQgetResult(conn)) != nullptr;)
				{
					if (statement == 0 && grant_res == nullptr)
						grant_res = res;
					else
						PQclear(res);
				}
			for (PGresult *res; (res = PQgetResult(conn)) != nullptr;)
			{
				ExecStatusType status = PQresultStatus(res);

				PQclear(res);
				if (status == PGRES_PIPELINE_SYNC)
					break;
			}
		}
		if (PQexitPipelineMode(conn) != 1 && grant_res != nullptr &&
			PQresultStatus(grant_res) == PGRES_TUPLES_OK)
		{
			/* The connection is unusable for the renewals: report it. */
			PQclear(grant_res);
			grant_res = nullptr;
		}
		return grant_res;
	}

	/* Hands back a lease that cannot be used; errors are ignored. */
	static void ReleaseQuiet(PGconn *conn, int64_t token)
	{
		std::string text = std::to_string(static_cast<long long>(token));
		const char *values[2] = {text.c_str(), nullptr};

		PQclear(PQexecParams(conn, "SELECT snowflake_release_lease($1::bigint, $2::bigint)",
							 2, nullptr, values, nullptr, nullptr, 0));
	}

	PGconn *conn_;
	std::unique_ptr<SyncRepWatch> watch_; /* its notice receiver, for conn_'s life */
	Grant grant_;
	std::unique_ptr<Clock> own_clock_;
	Clock *clock_;
	Generator generator_;
	std::function<void(const Error &)> on_renew_error_;
	std::thread renewer_;
	std::mutex stop_mutex_;
	std::condition_variable stop_cv_;
	bool stop_ = false;
	bool done_ = false;
	std::atomic<uint64_t> renewals_{0};
};

} /* namespace snowflake_lease */

#endif /* SNOWFLAKE_LEASE_PQ_HPP */
