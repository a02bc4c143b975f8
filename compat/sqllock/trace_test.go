package sqllock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
	"github.com/zkrecipes/zkrecipes/compat/sqllock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/tracetest"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
)

// traceTTL is the TTL of the traced locks, as the contract's.
const traceTTL = time.Second

// traceBackend is the trace scenarios' view of s; addr is its server's
// address, which Lapse's proxy stands in for. Lose gives the row to
// someone else.
func traceBackend(s server, addr string) tracetest.Backend {
	return tracetest.Backend{
		ID: func(name string) locktrace.LockID {
			backend := "postgres"
			if s.driver == "mysql" {
				backend = "mysql"
			}
			return locktrace.LockID{Backend: backend, Kind: "lock", Name: name}
		},
		Lock: func(t *testing.T, name string, tr *locktrace.Trace) recipes.Locker {
			return newLock(t, s.client(t), name, sqllock.WithTTL(traceTTL), sqllock.WithTrace(tr))
		},
		Broken: func(t *testing.T, name string, tr *locktrace.Trace) recipes.Locker {
			closed := open(t, s.driver, s.dsn)
			c := s.clientOn(t, closed)
			require.NoError(t, closed.Close())
			return newLock(t, c, name, sqllock.WithTrace(tr))
		},
		BrokenErr: func(t *testing.T, err error) {
			require.ErrorIs(t, err, recipes.ErrNotAcquired)
			assert.ErrorContains(t, err, "database is closed")
		},
		Lose:    func(t *testing.T, name string) { s.steal(t, name) },
		NotOurs: ttl.ErrNotOurs,
		Lapse: func(t *testing.T, name string, tr *locktrace.Trace) tracetest.Cut {
			cut, p := s.through(t, addr)
			l := newLock(t, cut.client(t), name, sqllock.WithTTL(faultTTL), sqllock.WithTrace(tr))
			return tracetest.Cut{Lock: l, Blackhole: func() { p.Blackhole(t) }, Restore: func() { p.Restore(t) }}
		},
		// The lease ends at its deadline, TTL − DriftMargin(TTL) after the
		// send of the last confirmed request, and the server's expiry is
		// the TTL after that send: the margin is DriftMargin(TTL) less how
		// late the clock woke the watchdog, which half the drift margin
		// bounds with room to spare (wantMargin allows 10 ms).
		// The lease ends at its deadline, TTL − DriftMargin(TTL) after the
		// send of the last confirmed request, and the server's expiry is
		// the TTL after that send: the margin is DriftMargin(TTL) less how
		// late the clock woke the watchdog, which half the drift margin
		// bounds once the scenario has discounted the process's stalls.
		LapseMargin: recipes.DriftMargin(faultTTL) / 2,
	}
}

// The outcomes of Acquire and TryAcquire, as a Trace sees them, attached
// by the lock's option and by the context.
func TestTraceAcquisitions(t *testing.T) {
	for _, db := range []string{"postgres", "mariadb"} {
		t.Run(db, func(t *testing.T) { tracetest.RunAcquisitions(t, traceBackend(startDB(t, db), "")) })
	}
}

// How a holding ends, as a Trace sees it, and its renewals.
func TestTraceLeaseEnds(t *testing.T) {
	for _, db := range []string{"postgres", "mariadb"} {
		t.Run(db, func(t *testing.T) { tracetest.RunLeaseEnds(t, traceBackend(startAt(t, db))) })
	}
}

// startAt is startDB, with the server's address.
func startAt(t *testing.T, db string) (server, string) {
	if db == "postgres" {
		s, pg := startPostgres(t)
		return s, pg.Addr()
	}
	s, m := startMariaDB(t)
	return s, m.Addr()
}
