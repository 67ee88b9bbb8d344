// The Go (pgx) worker-id lease recipe of docs/leases.md, run against a real
// server: a time-scoped lease, a few IDs from a small generator that follows
// "What a client must do", a renewal and a release.  Connects through the
// PG* environment variables to database "postgres" (any database with the
// extension leases), on a server with snowflake.lease_workers > 0
// (test/clients/run.sh sets it up).  Built in GOPATH mode against Debian's
// golang-github-jackc-pgx-v4-dev, together with snowflake_type.go (the
// snowflake type's checks, in database PGDATABASE).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/jackc/pgconn"
	"github.com/jackc/pgx/v4/pgxpool"
)

var passed, failed int

func check(cond bool, what string, detail ...interface{}) bool {
	n := passed + failed + 1
	if cond {
		passed++
		fmt.Printf("ok %d - %s\n", n, what)
	} else {
		failed++
		fmt.Printf("not ok %d - %s\n", n, what)
		if len(detail) > 0 {
			fmt.Printf("#   %s\n", fmt.Sprint(detail...))
		}
	}
	return cond
}

// lease is a row of snowflake_lease_worker().
type lease struct {
	WorkerID, NodeID              int64
	Token                         int64
	NotBefore, NotAfter, Epoch    time.Time
	RenewInterval                 time.Duration
	NodeBits, WorkerBits, SeqBits int
}

// generator makes IDs under a lease: each ID's millisecond lies strictly
// between not_before and not_after, and IDs strictly increase, also when the
// clock goes back.  One goroutine uses it (a real client would lock).
type generator struct {
	l                 lease
	notAfter          int64 // Unix ms; a renewal moves it
	lastMs, seq, last int64
	issued, stopped   bool
}

var errWindow = errors.New("the lease's window has ended: renew first")
var errStopped = errors.New("the lease is lost or released")

func newGenerator(l lease) *generator {
	return &generator{l: l, notAfter: l.NotAfter.UnixMilli(), lastMs: l.NotBefore.UnixMilli()}
}

func (g *generator) Next() (int64, error) {
	for !g.stopped {
		ms, seq := time.Now().UnixMilli(), int64(0)
		if ms <= g.lastMs { // not past not_before yet, the same millisecond, or the clock went back
			if !g.issued || g.seq+1 == 1<<g.l.SeqBits {
				time.Sleep(time.Millisecond)
				continue
			}
			ms, seq = g.lastMs, g.seq+1
		}
		if ms >= g.notAfter {
			return 0, errWindow
		}
		g.lastMs, g.seq, g.issued = ms, seq, true
		sb, wb, nb := g.l.SeqBits, g.l.WorkerBits, g.l.NodeBits
		g.last = (ms-g.l.Epoch.UnixMilli())<<(nb+wb+sb) | g.l.NodeID<<(wb+sb) | g.l.WorkerID<<sb | seq
		return g.last, nil
	}
	return 0, errStopped
}

// LastID is the last ID issued, nil (NULL) if none.
func (g *generator) LastID() *int64 {
	if !g.issued {
		return nil
	}
	last := g.last
	return &last
}

func (g *generator) SetNotAfter(t time.Time) { g.notAfter = t.UnixMilli() }
func (g *generator) Stop()                   { g.stopped = true }
func (g *generator) Stopped() bool           { return g.stopped }

// renew is rule 3 of "What a client must do": it reports the last ID and
// moves the window, and stops the generator for good when the lease is lost.
func renew(ctx context.Context, pool *pgxpool.Pool, l lease, gen *generator) (lost bool, err error) {
	// docs: go-renew
	var notAfter time.Time
	err = pool.QueryRow(ctx, `SELECT not_after FROM snowflake_renew_lease($1, $2, $3)`,
		l.Token, gen.LastID(), time.Now()).Scan(&notAfter)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "55000" {
		gen.Stop() // the lease is lost: stop for good
	} else if err == nil {
		gen.SetNotAfter(notAfter) // on other errors, go on until not_after and retry
	}
	// end docs
	return gen.Stopped(), err
}

func main() {
	if err := run(); err != nil {
		check(false, "the test ran to its end", err)
	}
	if err := snowflakeType(); err != nil {
		check(false, "the snowflake type checks ran to their end", err)
	}
	fmt.Printf("go: %d passed, %d failed\n", passed, failed)
	if failed > 0 || passed == 0 {
		os.Exit(1)
	}
}

func run() error {
	ctx := context.Background()
	// Any database with the extension: the lease table is the server's.
	pool, err := pgxpool.Connect(ctx, "dbname=postgres")
	if err != nil {
		return err
	}
	defer pool.Close()
	hostname, _ := os.Hostname()

	// docs: go-lease
	var l lease
	err = pool.QueryRow(ctx, `SELECT worker_id, node_id, token, not_before, not_after, renew_interval,
	       epoch, node_bits, worker_bits, sequence_bits
	  FROM snowflake_lease_worker($1, interval '30 seconds', $2)`,
		hostname+":"+strconv.Itoa(os.Getpid()), time.Now()).Scan(&l.WorkerID, &l.NodeID, &l.Token,
		&l.NotBefore, &l.NotAfter, &l.RenewInterval, &l.Epoch, &l.NodeBits, &l.WorkerBits, &l.SeqBits)
	// end docs
	if err != nil {
		return fmt.Errorf("snowflake_lease_worker(): %w", err)
	}
	granted := time.Now()

	var epoch time.Time
	var nodeID int64
	var nodeBits, workerBits, seqBits, leaseWorkers int
	err = pool.QueryRow(ctx, `SELECT epoch, node_id, node_bits, worker_bits, sequence_bits,
	       current_setting('snowflake.lease_workers')::int FROM snowflake_status()`).Scan(
		&epoch, &nodeID, &nodeBits, &workerBits, &seqBits, &leaseWorkers)
	if err != nil {
		return err
	}
	check(l.Epoch.Equal(epoch) && l.NodeBits == nodeBits && l.WorkerBits == workerBits && l.SeqBits == seqBits,
		"the lease's layout is snowflake_status()'s", fmt.Sprintf("%+v", l))
	check(l.NodeID == nodeID, "the lease's node_id is this server's", l.NodeID, " vs ", nodeID)
	top := int64(1) << workerBits
	check(leaseWorkers > 0 && l.WorkerID >= top-int64(leaseWorkers) && l.WorkerID < top,
		"the worker_id lies in the lease space", l.WorkerID, " of ", leaseWorkers)
	check(l.Token > 0, "the token is positive", l.Token)
	check(l.NotBefore.Before(l.NotAfter), "not_before < not_after", l.NotBefore, " ", l.NotAfter)
	start := granted // or not_before, if the previous holder's window ends later
	if l.NotBefore.After(start) {
		start = l.NotBefore
	}
	ttl := l.NotAfter.Sub(start)
	check(ttl > 29*time.Second && ttl <= 30*time.Second, "not_after is 30 s past the grant", ttl)
	check(l.RenewInterval == 10*time.Second, "renew_interval is a third of the ttl", l.RenewInterval)
	var state, holder string
	var expires time.Time
	err = pool.QueryRow(ctx, `SELECT state, holder, expires_at FROM snowflake_leases WHERE token = $1 AND node_id = $2`,
		l.Token, l.NodeID).Scan(&state, &holder, &expires)
	check(err == nil && state == "held" && holder == hostname+":"+strconv.Itoa(os.Getpid()) && expires.Equal(l.NotAfter),
		"snowflake_leases shows the lease held, its holder, and expires_at = not_after", err, " ", state, " ", holder, " ", expires)

	gen := newGenerator(l)
	var ids []int64
	for i := 0; i < 20; i++ {
		id, err := gen.Next()
		if err != nil {
			return fmt.Errorf("Next(): %w", err)
		}
		ids = append(ids, id)
		if i == 9 {
			time.Sleep(3 * time.Millisecond)
		}
	}
	increasing := true
	for i := 1; i < len(ids); i++ {
		increasing = increasing && ids[i-1] < ids[i]
	}
	check(increasing, "the IDs strictly increase", ids)

	var inWindow, ours int
	err = pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE ts > $2 AND ts < $3),
	       count(*) FILTER (WHERE node_id = $4 AND worker_id = $5)
	  FROM unnest($1::bigint[]) AS id, snowflake_decode(id)`,
		ids, l.NotBefore, l.NotAfter, l.NodeID, l.WorkerID).Scan(&inWindow, &ours)
	check(err == nil && inWindow == len(ids), "snowflake_decode(): every ID's timestamp lies inside the window", err, " ", inWindow)
	check(err == nil && ours == len(ids), "snowflake_decode(): every ID has the lease's node_id and worker_id", err, " ", ours)
	var ts time.Time
	var node, worker, seq int64
	last := *gen.LastID()
	err = pool.QueryRow(ctx, `SELECT ts, node_id, worker_id, seq FROM snowflake_decode($1)`, last).Scan(
		&ts, &node, &worker, &seq)
	check(err == nil && ts.UnixMilli() == gen.lastMs && seq == gen.seq && node == l.NodeID && worker == l.WorkerID,
		"snowflake_decode() of the last ID gives its exact millisecond and sequence, and the lease's node and worker id",
		err, fmt.Sprintf(" ts %d (generator %d), seq %d (%d), node %d, worker %d", ts.UnixMilli(), gen.lastMs, seq, gen.seq, node, worker))

	lost, err := renew(ctx, pool, l, gen)
	check(err == nil && !lost, "the renewal succeeds", err)
	check(gen.notAfter > l.NotAfter.UnixMilli(), "the renewal moved not_after", gen.notAfter, " after ", l.NotAfter.UnixMilli())
	var lastTs time.Time
	err = pool.QueryRow(ctx, `SELECT last_timestamp FROM snowflake_leases WHERE token = $1 AND node_id = $2`,
		l.Token, l.NodeID).Scan(&lastTs)
	check(err == nil && lastTs.UnixMilli() == gen.lastMs, "the renewal recorded the last ID's millisecond", err, " ", lastTs)
	if _, err := gen.Next(); err != nil {
		return fmt.Errorf("Next() after the renewal: %w", err)
	}

	// docs: go-release
	var released bool
	err = pool.QueryRow(ctx, `SELECT snowflake_release_lease($1, $2)`, l.Token, gen.LastID()).Scan(&released)
	// end docs
	check(err == nil && released, "the release returns true", err)

	lost, err = renew(ctx, pool, l, gen)
	var pgErr *pgconn.PgError
	check(errors.As(err, &pgErr) && pgErr.Code == "55000", "a renewal after the release fails with SQLSTATE 55000", err)
	check(lost, "renew() detects the lost lease")
	_, err = gen.Next()
	check(errors.Is(err, errStopped), "the generator stops for good", err)
	return nil
}
