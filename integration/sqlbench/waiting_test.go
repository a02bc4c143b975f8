package sqlbench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// Waiting: what sqllock's waiters cost the server while a holder holds
// the lock for longer than its TTL (renewing it), from the server's own
// counter (server.statements).

const (
	// waitingTTL is the TTL of the holder's and the waiters' locks.
	waitingTTL = 5 * time.Second
	// waitingShort and waitingLong are the two windows: the cost of
	// opening, queueing and closing is the same in both, so their
	// difference over waitingLong-waitingShort is the cost of waiting.
	// SQLBENCH_WAITING_LONG (a duration) sets the long one: waiters far
	// back in the queue refresh every four TTLs, so a longer one shows
	// their steady state.
	waitingShort = 5 * time.Second
	waitingLong  = 20 * time.Second
	// waitingClients is the most *sql.DB (and, on PostgreSQL, listeners)
	// the waiters share: the harness's PostgreSQL allows 100 connections.
	waitingClients = 8
)

// BenchmarkSQLWaiting: one sqllock holder holds a lock while 8, then 64
// waiters wait for it (spread over up to 8 Clients, each a *sql.DB of
// pgx's stdlib or go-sql-driver/mysql with their defaults, and on
// PostgreSQL its listener), for waitingShort and then waitingLong, each
// pass from a quiet server to its close. It reports the statements the
// server executed per waiter-second: the difference of the two passes
// over the waiters and the difference of the windows. The holder's
// renewals are in it (shared by the waiters). One iteration is the pair
// of passes for each waiter count.
func BenchmarkSQLWaiting(b *testing.B) {
	for _, kind := range kinds {
		b.Run(kind, func(b *testing.B) {
			s := startServer(b, kind)
			ctx := bounded(b, benchLimit)
			type config struct {
				name   string
				noPing bool
			}
			configs := []config{{"the drivers' defaults", false}}
			if kind == Postgres {
				configs = append(configs, config{"pgx's ping off (stdlib.OptionShouldPing)", true})
			}
			type row struct {
				c config
				n int
			}
			rates := map[row][]float64{}
			long := waitingLong
			if v := os.Getenv("SQLBENCH_WAITING_LONG"); v != "" {
				d, err := time.ParseDuration(v)
				if err != nil || d <= waitingShort {
					b.Fatalf("SQLBENCH_WAITING_LONG=%q: a duration longer than %v", v, waitingShort)
				}
				long = d
			}
			for b.Loop() {
				for _, c := range configs {
					for _, n := range []int{8, 64} {
						var got [2]counts
						for i, d := range []time.Duration{waitingShort, long} {
							cnt, err := waitingPass(ctx, s, n, d, c.noPing)
							if err != nil {
								b.Fatalf("%s, %d waiters, %v: %v", c.name, n, d, err)
							}
							got[i] = cnt
						}
						diff := got[1].sub(got[0])
						r := row{c, n}
						rates[r] = append(rates[r], float64(diff.statements)/float64(n)/(long-waitingShort).Seconds())
					}
				}
			}
			var tab strings.Builder
			fmt.Fprintf(&tab, "\n| clients | waiters | %s per waiter-second: each round | median |\n|---|---|---|---|\n", s.statementCounter())
			rounds := 0
			for _, c := range configs {
				for _, n := range []int{8, 64} {
					rs := rates[row{c, n}]
					rounds = len(rs)
					each := make([]string, len(rs))
					for i, r := range rs {
						each[i] = fmt.Sprintf("%.3f", r)
					}
					fmt.Fprintf(&tab, "| %s | %d | %s | %.3f |\n", c.name, n, strings.Join(each, ", "), median(rs))
					if !c.noPing {
						b.ReportMetric(median(rs), fmt.Sprintf("stmts/waiter-s-%d", n))
					}
				}
			}
			table(b, "%s, a holder holding past its TTL (%v), waiters over %v minus %v, %d rounds:%s",
				s.kind, waitingTTL, long, waitingShort, rounds, tab.String())
		})
	}
}

// waitingPass opens a holder and n waiters on a quiet server, holds the
// lock for d with them waiting, closes them all and returns what the
// server counted meanwhile.
func waitingPass(ctx context.Context, s *server, n int, d time.Duration, noPing bool) (counts, error) {
	before, err := s.statements(ctx)
	if err != nil {
		return counts{}, err
	}
	name := fmt.Sprintf("waiting-%d-%d", n, time.Now().UnixNano())
	var clients []*sqllockClient
	defer func() {
		for _, c := range clients {
			_ = c.close()
		}
	}()
	for range min(n, waitingClients) + 1 { // the holder's own, then the waiters'
		c, err := waitingClient(ctx, s, name, noPing)
		if err != nil {
			return counts{}, err
		}
		clients = append(clients, c)
	}
	lease, err := clients[0].l.Acquire(ctx)
	if err != nil {
		return counts{}, err
	}
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func(c *sqllockClient) {
			defer wg.Done()
			le, err := c.l.Acquire(wctx)
			switch {
			case err == nil:
				_ = le.Release(ctx)
				errs <- errors.New("a waiter got the lock while it was held")
			case wctx.Err() == nil:
				errs <- err
			}
		}(clients[1+i%(len(clients)-1)])
	}
	select {
	case err = <-errs:
	case <-time.After(d):
	}
	stop()
	wg.Wait()
	if err == nil && lease.Context().Err() != nil {
		err = fmt.Errorf("the holder lost its lease: %w", context.Cause(lease.Context()))
	}
	err = errors.Join(err, lease.Release(ctx))
	for _, c := range clients {
		err = errors.Join(err, c.close())
	}
	clients = nil
	if err != nil {
		return counts{}, err
	}
	after, err := s.statements(ctx)
	if err != nil {
		return counts{}, err
	}
	return after.sub(before), nil
}

// waitingClient is a sqllock Client of its own (a *sql.DB, and on
// PostgreSQL a listener) with the lock name at waitingTTL; noPing turns
// pgx's ping of a connection idle over a second off.
func waitingClient(ctx context.Context, s *server, name string, noPing bool) (*sqllockClient, error) {
	var db *sql.DB
	if noPing {
		cfg, err := pgx.ParseConfig(s.dsn)
		if err != nil {
			return nil, err
		}
		db = sql.OpenDB(&countingConnector{inner: stdlib.GetConnector(*cfg, stdlib.OptionShouldPing(
			func(context.Context, stdlib.ShouldPingParams) bool { return false })), sent: new(atomic.Int64)})
	} else {
		var err error
		if db, err = OpenDB(s.kind, s.dsn, nil); err != nil {
			return nil, err
		}
	}
	return sqllockOn(ctx, db, s.kind, s.dsn, name, waitingTTL)
}
