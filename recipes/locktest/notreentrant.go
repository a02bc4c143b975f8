package locktest

import (
	"context"
	"fmt"
	"testing"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// checkNotReentrant: on a lock that is not reentrant, Acquire and
// TryAcquire with a holding lease's context fail at once with an error that
// is ErrNotReentrant (waiting for itself would never end), and the lease
// stays held.
func checkNotReentrant(ctx context.Context, t *testing.T, b Backend, name string) error {
	var held holdings
	defer held.releaseAll(ctx)
	l := b.New(t, name)
	lease, err := take(ctx, "Acquire", l.Acquire)
	if err != nil {
		return err
	}
	held.keep(lease)
	for _, op := range []struct {
		name    string
		acquire acquireFunc
	}{{"Acquire", l.Acquire}, {"TryAcquire", l.TryAcquire}} {
		pctx, cancel := context.WithTimeout(lease.Context(), promptTimeout)
		err := refuse(pctx, op.name+"(lease.Context()) on the holding Locker", op.acquire, recipes.ErrNotReentrant)
		cancel()
		if err != nil {
			return err
		}
	}
	if err := checkHeld(lease, "the lease after the refused re-entries"); err != nil {
		return fmt.Errorf("%w", err)
	}
	return nil
}
