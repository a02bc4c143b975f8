package ttl

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Pending is the clean-up work one client of a TTL lock runs in the
// background (a release retried after it failed, a waiter's entry taken
// out of a queue, a lock taken too late freed again), so that the
// client's Close can wait for it: a process that closes its client and
// exits leaves nothing of its own behind on the server. The zero value is
// ready; it must not be copied after first use.
type Pending struct {
	mu   sync.Mutex
	n    int           // clean-ups running
	idle chan struct{} // closed when n drops to 0; nil while none ran since
	stop chan struct{} // closed by a Wait whose ctx ended first, for good
}

// CloseWait bounds how long a client's Close waits for its clean-ups:
// each is bounded by the lock's own expiry, which may be far off when the
// server does not answer; past this the clean-ups are stopped and the
// server lets what is left go at its TTL.
const CloseWait = 5 * time.Second

// Go runs fn on a goroutine of its own, counted until it returns. fn's
// context carries base's values, not its cancellation, and ends when a
// Wait gives up on the clean-ups; fn must return promptly then.
func (p *Pending) Go(base context.Context, fn func(ctx context.Context)) {
	p.mu.Lock()
	if p.n == 0 {
		p.idle = make(chan struct{})
	}
	if p.stop == nil {
		p.stop = make(chan struct{})
	}
	p.n++
	stop := p.stop
	p.mu.Unlock()
	ctx, cancel := context.WithCancel(context.WithoutCancel(base))
	go func() {
		defer p.done()
		defer cancel()
		unwatch := watchStop(stop, cancel)
		defer unwatch()
		fn(ctx)
	}()
}

// watchStop cancels when stop closes, until the returned func is called.
func watchStop(stop <-chan struct{}, cancel context.CancelFunc) (unwatch func()) {
	quit := make(chan struct{})
	go func() {
		select {
		case <-stop:
			cancel()
		case <-quit:
		}
	}()
	return func() { close(quit) }
}

func (p *Pending) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n--; p.n == 0 {
		close(p.idle)
	}
}

// Wait waits until no clean-up runs, or until ctx ends: then it stops
// those still running, waits for them to return, and reports how many it
// stopped. Once a Wait has stopped them, a later clean-up's context is
// ended from its start: Wait is for a client's Close.
func (p *Pending) Wait(ctx context.Context) error {
	p.mu.Lock()
	idle := p.idle
	p.mu.Unlock()
	if idle == nil {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
	}
	p.mu.Lock()
	stopped := p.n
	select {
	case <-p.stop:
	default:
		close(p.stop) // p.stop is set: idle was
	}
	idle = p.idle
	p.mu.Unlock()
	<-idle
	if stopped == 0 {
		return nil
	}
	return fmt.Errorf("%d clean-up(s) stopped unfinished (%w): the server frees what they left at its TTL",
		stopped, context.Cause(ctx))
}
