package semaphore

import (
	"context"

	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/shared"
)

// SharedCount is Curator's SharedCount, which now lives in the shared
// package (with Set, Changes and SharedValue).
//
// Deprecated: use shared.Count; this name is kept so that code written
// against the semaphore's count still builds.
type SharedCount = shared.Count

// NewSharedCount is shared.NewCount.
//
// Deprecated: use shared.NewCount.
func NewSharedCount(c *session.Client, path string, seed int) (*SharedCount, error) {
	return shared.NewCount(c, path, seed)
}

// maxOf is the semaphore's MaxLeases from a count: its value, and a watch
// on it.
func maxOf(count *shared.Count) func(context.Context) (int, <-chan session.Event, error) {
	return func(ctx context.Context) (int, <-chan session.Event, error) {
		n, _, ev, err := count.GetW(ctx)
		return n, ev, err
	}
}
