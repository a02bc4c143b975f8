package multilock_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktest"
)

// The contract suite on a MultiLock of three backends: a ZooKeeper mutex, a
// Redis lock and a memcached lock, each contender with its own session and
// clients. The fault breaks one member: the Redis lock's key is deleted
// under its holder (as an eviction or an operator would), and the
// MultiLock's lease must end when that member's does.
func TestContract(t *testing.T) {
	s := startServers(t)
	locktest.Run(t, locktest.Backend{
		New: func(t *testing.T, name string) recipes.Locker { return s.multi(t, name) },
		Lose: func(t *testing.T, name string, _ recipes.Lease) {
			require.NoError(t, s.rAdmin.Del(ctxT(t), "{"+name+"}").Err())
		},
		Leftovers: func(t *testing.T, name string) []string { return s.leftovers(t, name) },
		Reentrant: true,
		NoTokens:  true, // a MultiLock has none of its own: see Lease.Leases
	})
}
