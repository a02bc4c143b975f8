// Package grants is what the compat locks that hand a released lock to
// the next waiter share: the grant a release sends to the waiter's client
// ("id token stamp"), a board on which a client's waiters wait for theirs,
// the stamps that date a grant by the waiter's own clock, and the
// waiter's loop (Wait: attempt, back off, queue, wait for a grant or a
// timer), which each backend drives through its Queue.
//
// A waiter's every attempt carries a stamp (its send time on the
// monotonic clock, as a number the server can keep); the release that
// hands the lock over sends back the stamp of the waiter's last attempt
// before it. That attempt ran before the grant, so its send time bounds
// the lock's new expiry from below, as an acquiring request's does: the
// waiter may hold from it without asking the server again while a renewal
// is not due yet (Fresh).
package grants

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Grant is what a release that handed the lock to a waiter tells it.
type Grant struct {
	Token int64
	Stamp int64 // the waiter's, of its last attempt before the grant
}

// epoch is the origin of the stamps.
var epoch = time.Now()

// Stamp is t as a stamp: nanoseconds since the process's epoch, on the
// monotonic clock.
func Stamp(t time.Time) int64 { return int64(t.Sub(epoch)) }

// Unstamp is the time of a stamp.
func Unstamp(n int64) time.Time { return epoch.Add(time.Duration(n)) }

// Fresh reports whether g can be held from without a request, for a lease
// trusted for valid after its basis and renewed every: its basis (the
// stamp) is not in the future and a renewal is not due yet. Older, the
// waiter confirms the grant with an attempt.
func Fresh(g Grant, valid, every time.Duration) bool {
	basis := Unstamp(g.Stamp)
	return !basis.After(time.Now()) && time.Until(basis.Add(valid)) > valid-every
}

// Parse reads a grant message: "id token stamp".
func Parse(payload string) (id string, g Grant, ok bool) {
	id, rest, ok1 := strings.Cut(payload, " ")
	token, stamp, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 {
		return "", Grant{}, false
	}
	var err1, err2 error
	g.Token, err1 = strconv.ParseInt(token, 10, 64)
	g.Stamp, err2 = strconv.ParseInt(stamp, 10, 64)
	return id, g, err1 == nil && err2 == nil
}

// Board is where one client's waiters wait for their grants, by waiter
// id. It is ready once the client's subscription (or LISTEN) is confirmed
// by the server: a grant sent before that may have been missed.
type Board struct {
	mu        sync.Mutex
	ready     chan struct{}
	confirmed bool
	closed    bool
	waiters   map[string]chan Grant
}

// NewBoard returns an empty board, not ready.
func NewBoard() *Board {
	return &Board{ready: make(chan struct{}), waiters: map[string]chan Grant{}}
}

// Watcher is one waiter's registration.
type Watcher struct {
	b      *Board
	id     string
	Grants chan Grant // buffered: a grant to id arrived
	// Ready is closed once the board is ready; Confirmed says it was
	// already when the watch began.
	Ready     <-chan struct{}
	Confirmed bool
}

// Watch registers waiter id. On a closed board no grant comes: the watcher
// is ready at once, and the waiter goes on with its timer alone.
func (b *Board) Watch(id string) *Watcher {
	w := &Watcher{b: b, id: id, Grants: make(chan Grant, 1)}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		ready := make(chan struct{})
		close(ready)
		w.Ready, w.Confirmed = ready, true
		return w
	}
	b.waiters[id] = w.Grants
	w.Ready, w.Confirmed = b.ready, b.confirmed
	return w
}

// ReadyWait bounds AwaitReady: past it a waiter relies on its timer until
// the board is ready.
const ReadyWait = time.Second

// AwaitReady waits until the board is ready (a grant sent before that may
// have been missed, so the waiter then looks again), for ReadyWait at
// most; false when ctx ended first.
func (w *Watcher) AwaitReady(ctx context.Context) bool {
	t := time.NewTimer(ReadyWait)
	defer t.Stop()
	select {
	case <-w.Ready:
	case <-t.C:
	case <-ctx.Done():
		return false
	}
	return true
}

// Stop ends the watch.
func (w *Watcher) Stop() {
	w.b.mu.Lock()
	defer w.b.mu.Unlock()
	delete(w.b.waiters, w.id)
}

// Confirm marks the board ready.
func (b *Board) Confirm() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.confirmed {
		b.confirmed = true
		close(b.ready)
	}
}

// Deliver hands the grant in payload to the waiter it names, if it still
// waits; anything else is dropped. It returns the id named ("" when the
// payload is no grant).
func (b *Board) Deliver(payload string) string {
	id, g, ok := Parse(payload)
	if !ok {
		return ""
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if ch := b.waiters[id]; ch != nil {
		select {
		case ch <- g:
		default:
		}
	}
	return id
}

// Close marks the board closed: later watches get no grants. It reports
// whether it was open.
func (b *Board) Close() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	was := !b.closed
	b.closed = true
	return was
}

// Closed reports whether Close was called.
func (b *Board) Closed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}
