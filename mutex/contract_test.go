package mutex_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktest"
)

func TestMutexContract(t *testing.T) {
	servers := sharedServers(t)
	observer := connect(t, servers)
	locktest.Run(t, locktest.Backend{
		New: func(t *testing.T, name string) recipes.Locker {
			m, err := mutex.New(connect(t, servers), "/locktest/"+name)
			require.NoError(t, err)
			return m
		},
		// The lock node deleted under the holder (an operator, a
		// revocation): the lease must end at once.
		Lose: func(t *testing.T, name string, lease recipes.Lease) {
			nl, ok := lease.(recipes.NodeLease)
			require.True(t, ok)
			require.NoError(t, observer.Delete(ctxT(t), nl.Node(), -1))
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
