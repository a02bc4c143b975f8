package sqllock_test

import (
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/compat/sqllock"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktest"
)

func contract(t *testing.T, s server) {
	locktest.Run(t, locktest.Backend{
		New: func(t *testing.T, name string) recipes.Locker {
			return newLock(t, s.client(t), name, sqllock.WithTTL(time.Second))
		},
		Lose:      func(t *testing.T, name string, _ recipes.Lease) { s.steal(t, name) },
		Leftovers: func(t *testing.T, name string) []string { return s.leftovers(t, name) },
		Reentrant: true,
	})
}

func TestContractPostgres(t *testing.T) {
	s, _ := startPostgres(t)
	contract(t, s)
}

func TestContractPgBouncer(t *testing.T) {
	s, _ := startBouncer(t)
	contract(t, s)
}

func TestContractMariaDB(t *testing.T) {
	s, _ := startMariaDB(t)
	contract(t, s)
}
