/*
 * snowflake_lease.hpp
 *	  Snowflake IDs generated in the application, under a worker id leased
 *	  from the database: the pure part (no libpq).
 *
 * Header-only, C++17.  This header holds what can be tested without a
 * server: the ID layout, the rules of the lease window, the generator and
 * its clock.  snowflake_lease_pq.hpp adds the libpq part (taking, renewing
 * and releasing the lease); only it needs -lpq.
 *
 * Window: a lease lets its holder issue IDs whose Unix-ms timestamp t
 * satisfies not_before < t < not_after, both bounds exclusive.  not_before
 * is fixed for the lease; not_after moves forward with each renewal.
 *
 * The rules of the generator (Sequencer::Step()):
 * - The first ID waits until the clock has passed not_before.
 * - A clock ahead of the last ID's millisecond starts a new millisecond at
 *	 sequence 0.
 * - A clock at or behind it (stepped back) continues on the last ID's
 *	 millisecond with the next sequence number; when that millisecond's
 *	 sequence is used up, the next millisecond is taken only if it is at
 *	 most max_drift_ms ahead of the clock, else the caller waits for the
 *	 clock.
 * - An ID whose timestamp would reach not_after is not issued: the caller
 *	 waits for a renewal to move not_after, or for the lease to be lost.
 * So IDs of one generator strictly increase, and none repeats.
 */
#ifndef SNOWFLAKE_LEASE_HPP
#define SNOWFLAKE_LEASE_HPP

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <unistd.h>

namespace snowflake_lease {

/*
 * The layout of an ID, from the top bit down:
 *	 0 | timestamp | node_id | worker_id | sequence
 * "timestamp" counts ms since epoch_ms (a Unix time in ms) and takes the
 * bits the other fields leave of 63.
 */
struct Layout
{
	int64_t epoch_ms = 0;
	int node_bits = 0;
	int worker_bits = 0;
	int sequence_bits = 0;

	int TimestampBits() const { return 63 - node_bits - worker_bits - sequence_bits; }
	int WorkerShift() const { return sequence_bits; }
	int NodeShift() const { return sequence_bits + worker_bits; }
	int TimestampShift() const { return sequence_bits + worker_bits + node_bits; }
	uint32_t MaxSequence() const { return Mask(sequence_bits); }
	uint32_t MaxWorkerId() const { return Mask(worker_bits); }
	uint32_t MaxNodeId() const { return Mask(node_bits); }
	int64_t MaxTimestamp() const
	{
		return static_cast<int64_t>((uint64_t{1} << TimestampBits()) - 1);
	}

	/* Whether the widths make a layout; if not, *why says what is wrong. */
	bool Valid(std::string *why) const
	{
		if (node_bits < 0 || worker_bits < 0 || sequence_bits < 1 || node_bits > 31 ||
			worker_bits > 31 || sequence_bits > 31)
			return Fail(why, "field widths out of range");
		if (TimestampBits() < 1)
			return Fail(why, "no bits left for the timestamp");
		return true;
	}

private:
	static uint32_t Mask(int bits)
	{
		return static_cast<uint32_t>((uint64_t{1} << bits) - 1);
	}
	static bool Fail(std::string *why, const char *text)
	{
		if (why)
			*why = text;
		return false;
	}
};

/* The fields of an ID. */
struct IdParts
{
	int64_t timestamp = 0; /* ms since the layout's epoch */
	uint32_t node_id = 0;
	uint32_t worker_id = 0;
	uint32_t sequence = 0;
};

/* Packs fields into an ID.  The caller guarantees each field is in range. */
inline int64_t
Compose(const Layout &layout, const IdParts &parts)
{
	uint64_t id = static_cast<uint64_t>(parts.timestamp) << layout.TimestampShift();

	id |= static_cast<uint64_t>(parts.node_id) << layout.NodeShift();
	id |= static_cast<uint64_t>(parts.worker_id) << layout.WorkerShift();
	id |= parts.sequence;
	return static_cast<int64_t>(id);
}

/* Unpacks a non-negative ID, as the server's snowflake_decode() does. */
inline IdParts
Decompose(const Layout &layout, int64_t id)
{
	uint64_t u = static_cast<uint64_t>(id);
	IdParts parts;

	parts.timestamp = static_cast<int64_t>(u >> layout.TimestampShift());
	parts.node_id = static_cast<uint32_t>(u >> layout.NodeShift()) & layout.MaxNodeId();
	parts.worker_id = static_cast<uint32_t>(u >> layout.WorkerShift()) &
		layout.MaxWorkerId();
	parts.sequence = static_cast<uint32_t>(u) & layout.MaxSequence();
	return parts;
}

/* The Unix time (ms) of an ID's timestamp. */
inline int64_t
UnixMsOf(const Layout &layout, int64_t id)
{
	return layout.epoch_ms + Decompose(layout, id).timestamp;
}

/* What snowflake_lease_worker() granted; times are Unix ms. */
struct Grant
{
	uint32_t worker_id = 0;
	uint32_t node_id = 0;
	int64_t token = 0;
	int64_t not_before_ms = 0;
	int64_t not_after_ms = 0;
	int64_t renew_interval_ms = 0;
	bool connection_scoped = false;
	Layout layout;
};

/* Whether a grant can be used as it is; if not, *why says why. */
inline bool
ValidGrant(const Grant &grant, std::string *why)
{
	std::string dummy;

	if (!why)
		why = &dummy;
	if (!grant.layout.Valid(why))
		return false;
	if (grant.worker_id > grant.layout.MaxWorkerId() ||
		grant.node_id > grant.layout.MaxNodeId())
		*why = "worker_id or node_id does not fit the layout";
	else if (grant.not_before_ms < grant.layout.epoch_ms - 1)
		*why = "not_before lies before the layout's epoch";
	else if (grant.not_after_ms <= grant.not_before_ms)
		*why = "not_after is not after not_before";
	else if (grant.renew_interval_ms <= 0)
		*why = "renew_interval is not positive";
	else
		return true;
	return false;
}

/*
 * Unix ms as a timestamptz literal in UTC, "YYYY-MM-DD HH:MM:SS.mmm+00",
 * the form in which the client's clock is sent to the server.
 */
inline std::string
FormatUnixMs(int64_t unix_ms)
{
	int64_t secs = unix_ms / 1000;
	int64_t ms = unix_ms % 1000;
	time_t t;
	struct tm tm_utc;
	char buf[64];

	if (ms < 0)
	{
		ms += 1000;
		secs -= 1;
	}
	t = static_cast<time_t>(secs);
	if (gmtime_r(&t, &tm_utc) == nullptr)
		return std::string();
	snprintf(buf, sizeof(buf), "%04d-%02d-%02d %02d:%02d:%02d.%03d+00",
			 tm_utc.tm_year + 1900, tm_utc.tm_mon + 1, tm_utc.tm_mday, tm_utc.tm_hour,
			 tm_utc.tm_min, tm_utc.tm_sec, static_cast<int>(ms));
	return std::string(buf);
}

/*
 * Whether a failed lease call (renewal or release) means that the lease is
 * lost, from the server's SQLSTATE (empty if it sent none) and whether the
 * connection is still up:
 * - 55000: the lease is not held (it expired and its worker id was leased
 *	 again, or the server restarted with another layout), was released, or
 *	 belongs to another connection: lost, for good.
 * - a connection that is gone under a connection-scoped lease: lost too,
 *	 the server ends such a lease with its connection.
 * Anything else is transient: among them 57014, a cancelled statement.
 * Since snowflake 1.5 the lease functions wait for the synchronous standbys
 * themselves, and a cancel during that wait is this ERROR ("canceling
 * statement due to user request"); the change may have been made on the
 * primary, but is not known to be on a standby, so the client keeps the
 * window it last knew and retries.  42501 (another role's lease) and a
 * refused client clock are transient too: nothing says the lease ended.
 */
inline bool
FailureLosesLease(const std::string &sqlstate, bool connection_scoped, bool connected)
{
	if (sqlstate == "55000")
		return true;
	return connection_scoped && !connected;
}

/*
 * Whether a notice the server sent during a lease call says that the
 * commit's wait for synchronous replication was cancelled (servers before
 * snowflake 1.5 only, whose lease functions were SQL and waited at commit,
 * in SyncRepWaitForLSN; since 1.5 a lease call alone commits nothing that
 * waits there, and the functions' own wait ends in an ERROR, 57014,
 * instead: see FailureLosesLease()): the WARNING
 * "canceling wait for synchronous replication due to user request"
 * (a query cancel) or "canceling the wait for synchronous replication and
 * terminating connection due to administrator command" (a terminate).  The
 * transaction has then committed on the primary but is not known to be on
 * a synchronous standby, so a failover may lose it.  message is the
 * notice's primary text, function its PG_DIAG_SOURCE_FUNCTION; either may
 * be null.  The function, SyncRepWaitForLSN, which issues only these two
 * warnings, is matched too, because the text is translated under a
 * non-English lc_messages.
 */
inline bool
IsSyncRepCancelNotice(const char *message, const char *function)
{
	static const char *const kPrefixes[] = {
		"canceling wait for synchronous replication",
		"canceling the wait for synchronous replication",
	};

	if (function && strcmp(function, "SyncRepWaitForLSN") == 0)
		return true;
	for (const char *prefix : kPrefixes)
		if (message && strncmp(message, prefix, strlen(prefix)) == 0)
			return true;
	return false;
}

/*
 * "<hostname>:<pid>:<name>", a holder text that says which process holds a
 * lease.
 */
inline std::string
DefaultHolder(const std::string &name)
{
	char host[256] = {0};

	if (gethostname(host, sizeof(host) - 1) != 0)
		snprintf(host, sizeof(host), "unknown-host");
	return std::string(host) + ":" + std::to_string(static_cast<long long>(getpid())) +
		":" + name;
}

/*
 * The wall clock the generator reads, in Unix ms.  Tests pass a fake one;
 * SleepMs() is how the generator waits for the clock to reach a time.
 */
class Clock
{
public:
	virtual ~Clock() = default;
	virtual int64_t NowMs() = 0;
	virtual void SleepMs(int64_t ms) = 0;
};

/*
 * CLOCK_REALTIME, shifted by offset_ms (so a test can play a client whose
 * clock is behind or ahead).
 */
class SystemClock : public Clock
{
public:
	explicit SystemClock(int64_t offset_ms = 0) : offset_ms_(offset_ms) {}

	int64_t NowMs() override
	{
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000 + offset_ms_;
	}
	void SleepMs(int64_t ms) override
	{
		if (ms > 0)
			std::this_thread::sleep_for(std::chrono::milliseconds(ms));
	}

private:
	int64_t offset_ms_;
};

/* The outcome of asking for an ID. */
enum class Status
{
	kIssued,      /* an ID was produced */
	kWaitClock,   /* the clock must first reach a time */
	kWaitRenewal, /* not_after must first move past a time */
	kExhausted,   /* the layout has no timestamps left */
	kLost,        /* the lease is lost: no ID, ever again */
	kClosed,      /* the generator was closed */
	kTimeout,     /* Generator::Next()'s timeout ran out */
};

inline const char *
StatusName(Status status)
{
	switch (status)
	{
		case Status::kIssued:
			return "issued";
		case Status::kWaitClock:
			return "waiting for the clock";
		case Status::kWaitRenewal:
			return "waiting for a renewal of the lease";
		case Status::kExhausted:
			return "the layout's timestamps are used up";
		case Status::kLost:
			return "the lease is lost";
		case Status::kClosed:
			return "the generator is closed";
		case Status::kTimeout:
			return "timed out";
	}
	return "unknown";
}

/*
 * The algorithm of one lease, without clock, threads or waiting: the
 * caller passes "now" and the current not_after.  Not thread-safe.
 */
class Sequencer
{
public:
	Sequencer(const Layout &layout, uint32_t node_id, uint32_t worker_id,
			  int64_t not_before_ms, int64_t max_drift_ms = 0)
		: layout_(layout),
		  fixed_bits_(static_cast<uint64_t>(node_id) << layout.NodeShift() |
					  static_cast<uint64_t>(worker_id) << layout.WorkerShift()),
		  not_before_ms_(not_before_ms), max_drift_ms_(max_drift_ms < 0 ? 0 : max_drift_ms)
	{
	}

	/*
	 * The next ID at wall-clock time now_ms under a window that ends at
	 * not_after_ms (both Unix ms).
	 * kIssued: *out is the ID.
	 * kWaitClock: *out is the earliest now_ms at which to call again.
	 * kWaitRenewal: *out is the timestamp (Unix ms) that not_after must
	 * exceed first.
	 * kExhausted: the layout cannot express the next timestamp.
	 * Except for kIssued, nothing changes.
	 */
	Status Step(int64_t now_ms, int64_t not_after_ms, int64_t *out)
	{
		int64_t ts;
		uint32_t seq;

		if (!issued_)
		{
			if (now_ms <= not_before_ms_)
			{
				*out = not_before_ms_ + 1;
				return Status::kWaitClock;
			}
			ts = now_ms;
			seq = 0;
		}
		else if (now_ms > last_ms_)
		{
			ts = now_ms;
			seq = 0;
		}
		else if (last_seq_ < layout_.MaxSequence())
		{
			/* The clock is at or behind the last ID: continue on it. */
			ts = last_ms_;
			seq = last_seq_ + 1;
		}
		else
		{
			/* The millisecond is used up: borrow the next, within max_drift. */
			ts = last_ms_ + 1;
			seq = 0;
			if (ts - now_ms > max_drift_ms_)
			{
				*out = ts - max_drift_ms_;
				return Status::kWaitClock;
			}
		}
		if (ts >= not_after_ms)
		{
			*out = ts;
			return Status::kWaitRenewal;
		}
		if (ts - layout_.epoch_ms > layout_.MaxTimestamp())
			return Status::kExhausted;

		last_ms_ = ts;
		last_seq_ = seq;
		issued_ = true;
		last_id_ = static_cast<int64_t>(static_cast<uint64_t>(ts - layout_.epoch_ms)
											<< layout_.TimestampShift() |
										fixed_bits_ | seq);
		*out = last_id_;
		return Status::kIssued;
	}

	bool HasIssued() const { return issued_; }
	/* The last ID issued; meaningful only if HasIssued(). */
	int64_t LastId() const { return last_id_; }
	const Layout &layout() const { return layout_; }

private:
	Layout layout_;
	uint64_t fixed_bits_;
	int64_t not_before_ms_;
	int64_t max_drift_ms_;
	bool issued_ = false;
	int64_t last_ms_ = 0; /* Unix ms of the last ID */
	uint32_t last_seq_ = 0;
	int64_t last_id_ = -1;
};

/*
 * A Sequencer behind a mutex, with the clock, the moving end of the
 * window, and the lease's fate.  Thread-safe: Next() may be called from
 * several threads while another (the renewer) calls ExtendWindow() or
 * MarkLost().
 */
class Generator
{
public:
	Generator(const Grant &grant, Clock &clock, int64_t max_drift_ms = 0)
		: clock_(clock), sequencer_(grant.layout, grant.node_id, grant.worker_id,
									grant.not_before_ms, max_drift_ms),
		  not_after_ms_(grant.not_after_ms)
	{
	}

	Generator(const Generator &) = delete;
	Generator &operator=(const Generator &) = delete;

	/*
	 * The next ID, waiting for the clock or for a renewal as needed.
	 * timeout_ms < 0 waits as long as it takes.  Returns kIssued (and sets
	 * *id), kLost, kClosed, kExhausted or kTimeout.
	 */
	Status Next(int64_t *id, int64_t timeout_ms = -1)
	{
		using Steady = std::chrono::steady_clock;
		const Steady::time_point deadline = Steady::now() +
			std::chrono::milliseconds(timeout_ms < 0 ? 0 : timeout_ms);
		std::unique_lock<std::mutex> lock(mutex_);

		for (;;)
		{
			int64_t now;
			int64_t value;
			Status status = StepLocked(&now, &value);

			if (status == Status::kIssued)
				*id = value;
			if (status != Status::kWaitClock && status != Status::kWaitRenewal)
				return status;

			int64_t slice = kWaitSliceMs;

			if (timeout_ms >= 0)
			{
				int64_t left = std::chrono::duration_cast<std::chrono::milliseconds>(
								   deadline - Steady::now())
								   .count();

				if (left <= 0)
					return Status::kTimeout;
				slice = std::min(slice, left);
			}
			if (status == Status::kWaitClock)
			{
				/* Sleep without the mutex, then look again. */
				lock.unlock();
				clock_.SleepMs(std::max<int64_t>(1, std::min(slice, value - now)));
				lock.lock();
			}
			else
			{
				uint64_t version = window_version_;

				changed_.wait_for(lock, std::chrono::milliseconds(slice), [&] {
					return closed_ || lost_ || window_version_ != version;
				});
			}
		}
	}

	/*
	 * Like Next(), but never waits: kWaitClock and kWaitRenewal come back
	 * with *id set as Sequencer::Step() says.
	 */
	Status TryNext(int64_t *id)
	{
		std::lock_guard<std::mutex> lock(mutex_);
		int64_t now;

		return StepLocked(&now, id);
	}

	/* A renewal came through: the window now ends at not_after_ms. */
	void ExtendWindow(int64_t not_after_ms)
	{
		{
			std::lock_guard<std::mutex> lock(mutex_);

			not_after_ms_.store(not_after_ms);
			window_version_++;
		}
		changed_.notify_all();
	}

	/* The lease is lost: no ID from now on.  The first reason is kept. */
	void MarkLost(const std::string &reason)
	{
		{
			std::lock_guard<std::mutex> lock(mutex_);

			if (!lost_)
				lost_reason_ = reason;
			lost_ = true;
		}
		changed_.notify_all();
	}

	/*
	 * No ID from now on.  Once it returns, no Next() is issuing, so
	 * LastId() is final.
	 */
	void Close()
	{
		{
			std::lock_guard<std::mutex> lock(mutex_);

			closed_ = true;
		}
		changed_.notify_all();
	}

	int64_t NotAfterMs() const { return not_after_ms_.load(); }
	bool Lost() const
	{
		std::lock_guard<std::mutex> lock(mutex_);

		return lost_;
	}
	std::string LostReason() const
	{
		std::lock_guard<std::mutex> lock(mutex_);

		return lost_reason_;
	}
	/* The last ID issued, if any (read by the renewer without the mutex). */
	std::optional<int64_t> LastId() const
	{
		int64_t id = last_id_.load();

		if (id < 0)
			return std::nullopt;
		return id;
	}

private:
	/* Longest single wait, so Close() and MarkLost() are seen promptly. */
	static constexpr int64_t kWaitSliceMs = 50;

	Status StepLocked(int64_t *now, int64_t *value)
	{
		if (closed_)
			return Status::kClosed;
		if (lost_)
			return Status::kLost;
		*now = clock_.NowMs();

		Status status = sequencer_.Step(*now, not_after_ms_.load(), value);

		if (status == Status::kIssued)
			last_id_.store(*value);
		return status;
	}

	Clock &clock_;
	mutable std::mutex mutex_;
	std::condition_variable changed_;
	Sequencer sequencer_;
	std::atomic<int64_t> not_after_ms_;
	std::atomic<int64_t> last_id_{-1};
	uint64_t window_version_ = 0;
	bool lost_ = false;
	bool closed_ = false;
	std::string lost_reason_;
};

} /* namespace snowflake_lease */

#endif /* SNOWFLAKE_LEASE_HPP */
