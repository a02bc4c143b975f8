package mutex_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktest"
	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/znode"
)

func TestMutexContract(t *testing.T) {
	servers := sharedServers(t)
	observer := connect(t, servers)
	var mu sync.Mutex
	proxies := map[*session.Client]*harness.Proxy{}
	locktest.Run(t, locktest.Backend{
		// Each contender has its own session, through its own fault proxy.
		New: func(t *testing.T, name string) recipes.Locker {
			p := harness.NewProxy(t, servers[0])
			c := connect(t, []string{p.Addr()}, session.WithSessionTimeout(2*time.Second))
			mu.Lock()
			proxies[c] = p
			mu.Unlock()
			m, err := mutex.New(c, "/locktest/"+name)
			require.NoError(t, err)
			return m
		},
		// The holder is partitioned from ZooKeeper: its lease must end (at
		// the suspension) before its session expires and frees the lock.
		Lose: func(t *testing.T, name string, lease recipes.Lease) {
			nl, ok := lease.(znode.Lease)
			require.True(t, ok)
			mu.Lock()
			defer mu.Unlock()
			for c, p := range proxies {
				if s := c.CurrentSession(); s != nil && s.ID() == nl.SessionID() {
					p.Blackhole(t)
					return
				}
			}
			t.Fatal("no proxy for the lease's session")
		},
		Leftovers: func(t *testing.T, name string) []string {
			kids, _, err := observer.Children(ctxT(t), "/locktest/"+name)
			if err != nil {
				return nil // no parent: nothing left
			}
			return kids
		},
		Reentrant: true,
	})
}
