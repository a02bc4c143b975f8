package redislock

import (
	"context"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes/compat/internal/grants"
	"github.com/zkrecipes/zkrecipes/internal/hold"
)

// waiting is one Acquire or TryAcquire of a lock by the waiter id, as
// grants.Wait drives it: every way out but success leaves nothing of the
// waiter in Redis.
type waiting struct {
	l     *Lock
	id    string
	entry string // its queue entry: "" when none, "?" when unknown
}

var _ grants.Queue = (*waiting)(nil)

func (w *waiting) String() string { return w.l.String() }

// Watch registers the waiter on its Client's subscription. Every waiting
// Acquire registers (see grants.Wait): registering only for an attempt
// known to queue would need a first attempt that does not queue, a fourth
// command for every contended acquisition. The registration is a map
// entry under the subscriber's mutex; the subscription itself is made
// once per Client.
func (w *waiting) Watch() *grants.Watcher {
	return w.l.c.subscription(w.l.channel).watch(w.id)
}

// Attempt runs the acquire script once, and keeps the waiter's queue
// entry: unknown ("?") after an error of a queuing attempt, which may
// have queued it anew.
func (w *waiting) Attempt(ctx context.Context, queue bool, sent time.Time) (grants.Outcome, error) {
	got, err := w.l.attempt(ctx, w.id, queue, w.entry, sent)
	switch {
	case err != nil && queue:
		w.entry = "?"
	case err == nil:
		w.entry = got.entry
	}
	if err != nil {
		return grants.Outcome{}, errRedis("acquire "+w.l.name, err)
	}
	o := grants.Outcome{Acquired: got.acquired, Token: got.token, Wait: got.wait}
	if got.quiet {
		// Free, but the server's quiet period: it may have forgotten a
		// holder.
		o.Why = fmt.Errorf("%w: it grants nothing for %v", ErrQuiet, got.wait)
	}
	return o, nil
}

// Trusts a fresh grant, unless the lock's writes must reach replicas: a
// grant is not known to be on enough of them.
func (w *waiting) Trusts(g grants.Grant) bool {
	return w.l.acks == 0 && grants.Fresh(g, w.l.terms.Valid, w.l.terms.Every)
}

func (w *waiting) Hold(ctx context.Context, token int64, sent time.Time) (*hold.Lease, error) {
	return w.l.hold(ctx, w.id, token, sent)
}

// GiveUp takes the waiter out of the queue, and releases the lock if it
// was handed to it meanwhile (see Lock.cancel).
func (w *waiting) GiveUp(ctx context.Context) { w.l.cancel(ctx, w.id, w.entry) }
