package ttl

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// Free gives the lock up at the last Release, once no renewal is in
// flight. A loss that came first (racing the Release) is reported as such;
// what is left of the lock is freed in the background then.
func (w *watchdog) Free(ctx context.Context) error {
	if !w.halt(nil) {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.lost
	}
	w.renewing.Wait()
	err := w.srv.Free(ctx)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNotOurs):
		return fmt.Errorf("%w: %s: %w", recipes.ErrLockLost, w.terms.What, err)
	case errors.Is(err, ErrPermanent):
		return fmt.Errorf("%s: release: %w", w.terms.What, err)
	}
	// Ctx ended, or the server did not answer: the lock must not stay
	// held for the rest of its TTL, so the release goes on.
	FreeInBackground(w.bg, w.base, w.srv, w.expiry())
	return fmt.Errorf("%s: release: %w (retried in the background until the lock would expire)", w.terms.What, err)
}

// Bounds of a release made in the background.
const (
	// freeTimeout bounds one attempt.
	freeTimeout = 5 * time.Second
	// freeRetry is the first pause between attempts, doubled up to
	// freeRetryCap.
	freeRetry    = 20 * time.Millisecond
	freeRetryCap = time.Second
)

// FreeInBackground frees the lock on a clean-up of bg, trying again after
// transient errors until it is freed, found not ours, or the server would
// have let it go anyway (until): the lock is never left held for its
// whole TTL by a release that failed once. It tries once even past until:
// a backend may hold more than the lock (sqllock's MySQL wake-up holds a
// connection). base supplies the context values.
func FreeInBackground(bg *Pending, base context.Context, srv Server, until time.Time) {
	bg.Go(base, func(bg context.Context) {
		pause := freeRetry
		for first := true; ; first = false {
			left := time.Until(until)
			if left <= 0 {
				if !first {
					return
				}
				left = freeTimeout
			}
			ctx, cancel := context.WithTimeout(bg, min(freeTimeout, left))
			err := srv.Free(ctx)
			cancel()
			if err == nil || errors.Is(err, ErrNotOurs) || errors.Is(err, ErrPermanent) {
				return
			}
			if !Sleep(bg, min(pause, time.Until(until))) {
				return
			}
			pause = min(2*pause, freeRetryCap)
		}
	})
}
