package sqllock_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/sqllock"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// On MySQL only the queue's head watches the holder's expiry; the
// waiters behind it wait for the head. The holder vanishes in silence
// (its companion stays held in the server, its row expires), and then
// the head goes too: it gives up, its connection is closed, or it
// vanishes in silence as well (its head name stays held in the server).
// The waiter behind it is the one that takes the lock, the head never
// does, and the holder was told before.
func TestMySQLHeadGoes(t *testing.T) {
	for _, fault := range []string{"gives up", "closed", "silent"} {
		t.Run(fault, func(t *testing.T) {
			s, m := startMariaDB(t)
			ctx := ctxT(t)
			cutH, ph := s.through(t, m.Addr())
			cutA, pa := s.through(t, m.Addr())
			defer ph.Restore(t)
			defer pa.Restore(t)
			const name = "head-goes"
			held, err := newLock(t, cutH.client(t), name).Acquire(ctx)
			require.NoError(t, err)

			actx, giveUp := context.WithCancel(ctx)
			defer giveUp()
			a := make(chan error, 1)
			head := newLock(t, cutA.client(t), name)
			go func() {
				le, err := head.Acquire(actx)
				if err == nil {
					_ = le.Release(ctx)
				}
				a <- err
			}()
			require.Eventually(t, func() bool { return s.waiting(t, name) == 1 && headHeld(t, s.admin, name) },
				waitLimit, 5*time.Millisecond, "the first waiter is not the head")
			b := make(chan recipes.Lease, 1)
			behind := newLock(t, s.client(t), name)
			go func() {
				le, err := behind.Acquire(ctx)
				assert.NoError(t, err)
				b <- le
			}()
			require.Eventually(t, func() bool { return s.waiting(t, name) == 2 }, waitLimit, 5*time.Millisecond)

			ph.Blackhole(t) // the holder vanishes
			switch fault {
			case "gives up":
				giveUp()
			case "closed":
				pa.Cut(t)
			case "silent":
				pa.Blackhole(t)
			}
			lease := <-b
			require.NotNil(t, lease, "the waiter behind did not get the lock")
			assert.Error(t, held.Context().Err(), "the holder was not told before the next grant")
			giveUp()
			pa.Restore(t)
			require.ErrorIs(t, <-a, recipes.ErrNotAcquired, "the head got the lock too")
			require.NoError(t, lease.Release(ctx))
			ph.Restore(t)
			_ = held.Release(ctx)
		})
	}
}

// headHeld reports whether someone holds lock name's queue head.
func headHeld(t testing.TB, admin *sql.DB, name string) bool {
	var held bool
	require.NoError(t, admin.QueryRowContext(ctxT(t), "SELECT IS_USED_LOCK(?) IS NOT NULL", sqllock.HeadName(name)).Scan(&held))
	return held
}
