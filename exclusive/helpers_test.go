package exclusive_test

import (
	"context"
	"time"

	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/session"
)

func ctxWithTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

func newLockE(c *session.Client, path string) (*exclusive.Lock, error) { return exclusive.New(c, path) }
