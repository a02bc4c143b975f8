package sqlbench

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/zkrecipes/zkrecipes/internal/testkit/lockbench"
)

// BenchmarkSQLHandoffCeiling measures what any fair lock that hands over
// by NOTIFY, and whose releaser queues again (hold 0), can reach on this
// PostgreSQL at 16 clients, with statements that cost nothing: a ring of
// 16 clients, each with a statement connection and a LISTEN connection;
// the holder hands the lock to the next with one UPDATE that notifies it
// (RETURNING pg_notify), then sends one more trivial UPDATE (its queueing
// again), and waits for its own notification. With notify=false the wake-up
// is a Go channel instead, which shows NOTIFY's cost: PostgreSQL 15 wakes
// every listening connection of the database at each notify, whatever its
// channel. Each iteration is one round of ceilingRound per variant; the
// table gives the handoffs per second. (Run it in the same command as
// BenchmarkSQLContended/postgres to compare with the seed's rate.)
func BenchmarkSQLHandoffCeiling(b *testing.B) {
	s := startServer(b, Postgres)
	ctx := bounded(b, benchLimit)
	var notify, plain []float64
	for b.Loop() {
		for _, v := range []bool{true, false} {
			rate, err := ring(ctx, s.dsn, 16, v)
			if err != nil {
				b.Fatal(err)
			}
			if v {
				notify = append(notify, rate)
			} else {
				plain = append(plain, rate)
			}
		}
	}
	b.ReportMetric(median(notify), "notify-handoffs/s")
	b.ReportMetric(median(plain), "plain-handoffs/s")
	table(b, "postgres, a ring of 16 clients, hold 0, a handoff and a re-queue UPDATE each, %v rounds:\n\n| wake-up | handoffs/s (median) | rounds |\n|---|---|---|\n| NOTIFY (16 listeners) | %.0f | %v |\n| Go channel (no NOTIFY) | %.0f | %v |\n",
		ceilingRound, median(notify), roundsOf(notify), median(plain), roundsOf(plain))
}

// ceilingRound is how long one ring runs (after a warm-up of a tenth).
const ceilingRound = 3 * time.Second

func median(xs []float64) float64 { return lockbench.Median(append([]float64(nil), xs...)) }

func roundsOf(xs []float64) string { return fmt.Sprintf("%.0f", xs) }

// ring runs the ring of n clients for ceilingRound and returns its
// handoffs per second.
func ring(ctx context.Context, dsn string, n int, notify bool) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, ceilingRound+time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return 0, err
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(ctx, `CREATE TABLE IF NOT EXISTS ring (id int PRIMARY KEY, holder int, token bigint);
		INSERT INTO ring VALUES (1, 0, 0) ON CONFLICT DO NOTHING`); err != nil {
		return 0, err
	}
	var conns []*pgx.Conn
	defer func() {
		for _, c := range conns {
			_ = c.Close(context.Background())
		}
	}()
	connect := func() (*pgx.Conn, error) {
		c, err := pgx.Connect(ctx, dsn)
		if err == nil {
			conns = append(conns, c)
		}
		return c, err
	}
	wake := make([]chan struct{}, n)
	stmts := make([]*pgx.Conn, n)
	lctx, stopListening := context.WithCancel(ctx)
	defer stopListening()
	for i := range n {
		wake[i] = make(chan struct{}, 1)
		if stmts[i], err = connect(); err != nil {
			return 0, err
		}
		ln, err := connect()
		if err != nil {
			return 0, err
		}
		if _, err := ln.Exec(ctx, fmt.Sprintf("LISTEN ring_%d", i)); err != nil {
			return 0, err
		}
		go func() {
			for {
				if _, err := ln.WaitForNotification(lctx); err != nil {
					return
				}
				select {
				case wake[i] <- struct{}{}:
				case <-lctx.Done():
					return
				}
			}
		}()
	}
	var count atomic.Int64
	stop := make(chan struct{})
	errs := make(chan error, n)
	for i := range n {
		go func() {
			next := (i + 1) % n
			for {
				select {
				case <-wake[i]:
				case <-stop:
					errs <- nil
					return
				}
				var s string
				q := `UPDATE ring SET holder = $1::int, token = token + 1 WHERE id = 1 RETURNING token::text`
				if notify {
					q = `UPDATE ring SET holder = $1::int, token = token + 1 WHERE id = 1 RETURNING pg_notify('ring_' || $1::int, token::text)::text`
				}
				if err := stmts[i].QueryRow(ctx, q, next).Scan(&s); err != nil {
					errs <- err
					return
				}
				if !notify {
					wake[next] <- struct{}{}
				}
				count.Add(1)
				if _, err := stmts[i].Exec(ctx, `UPDATE ring SET token = token + 1 WHERE id = 1`); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wake[0] <- struct{}{}
	time.Sleep(ceilingRound / 10)
	c0, t0 := count.Load(), time.Now()
	time.Sleep(ceilingRound)
	c1, t1 := count.Load(), time.Now()
	close(stop)
	var first error
	for range n {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return float64(c1-c0) / t1.Sub(t0).Seconds(), first
}
