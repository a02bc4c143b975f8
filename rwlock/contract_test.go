package rwlock_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktest"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/znode"
)

// contractRoot is the parent of the contract suite's locks.
const contractRoot = "/rwcontract/"

// contractBackend runs the contract suite on one half of the read/write
// lock: the write half (exclusive), or the read half (shared), whose
// Blocker is the write half of another RWLock on a session of its own.
func contractBackend(t *testing.T, half func(*rwlock.RWLock) recipes.Locker, shared bool) locktest.Backend {
	servers := sharedServers(t)
	observer := connect(t, servers)
	var mu sync.Mutex
	proxies := map[*session.Client]*harness.Proxy{}
	b := locktest.Backend{
		// Each contender has its own session, through its own fault proxy.
		New: func(t *testing.T, name string) recipes.Locker {
			p := harness.NewProxy(t, servers[0])
			c := connect(t, []string{p.Addr()}, session.WithSessionTimeout(2*time.Second))
			mu.Lock()
			proxies[c] = p
			mu.Unlock()
			return half(newRW(t, c, contractRoot+name))
		},
		// The holder is partitioned from ZooKeeper: its lease must end (at
		// the suspension) before its session expires and frees the lock.
		Lose: func(t *testing.T, name string, lease recipes.Lease) {
			nl, ok := lease.(znode.Lease)
			require.True(t, ok, "lease %T has no node", lease)
			mu.Lock()
			defer mu.Unlock()
			for c, p := range proxies {
				if s := c.CurrentSession(); s != nil && s.ID() == nl.SessionID() {
					p.Blackhole(t)
					return
				}
			}
			t.Fatalf("no proxy for the lease's session 0x%x", nl.SessionID())
		},
		Leftovers: func(t *testing.T, name string) []string {
			kids, _, err := observer.Children(ctxT(t), contractRoot+name)
			if err != nil {
				return nil // no parent: nothing left
			}
			return kids
		},
		Reentrant: true,
	}
	if shared {
		b.Shared = true
		b.Blocker = func(t *testing.T, name string) recipes.Locker {
			return newRW(t, connect(t, servers), contractRoot+name).WriteLock()
		}
	}
	return b
}

func writeHalf(l *rwlock.RWLock) recipes.Locker { return l.WriteLock() }
func readHalf(l *rwlock.RWLock) recipes.Locker  { return l.ReadLock() }

func TestWriteHalfContract(t *testing.T) {
	locktest.Run(t, contractBackend(t, writeHalf, false))
}

func TestReadHalfContract(t *testing.T) {
	locktest.Run(t, contractBackend(t, readHalf, true))
}
