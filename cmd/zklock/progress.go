package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/session"
)

// defaultProgress is --progress's default: how often -v reports a wait
// that goes on.
const defaultProgress = 10 * time.Second

// followWait reports, with -v, what happens while zklock waits for the
// lock: ZooKeeper's reconnections (the session client logs a suspended
// connection, not its return), and, every --progress, a line saying the
// wait goes on, with what the backend can tell: on ZooKeeper the position
// in the queue and each holder with how long it has held (the listing of
// zklock ls); on the other backends, which list no queue, the time waited
// alone. stop ends it, and returns once nothing more is printed.
func (r *runner) followWait() (stop func()) {
	if !r.rep.verbose {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var states <-chan session.StateChange
	if r.client != nil {
		states, _ = r.client.Subscribe(ctx) // nil after a Close: nothing to follow
	}
	start := time.Now()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var tick <-chan time.Time
		if r.o.progress > 0 {
			t := time.NewTicker(r.o.progress)
			defer t.Stop()
			tick = t.C
		}
		for {
			select {
			case ch, ok := <-states:
				if !ok {
					states = nil
					continue
				}
				r.reportState(ch)
			case <-tick:
				r.rep.infof("still waiting for %s after %s%s", r.lockName(), roundHeld(time.Since(start)), r.queueReport(ctx))
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() {
		cancel()
		wg.Wait()
	}
}

// reportState prints ZooKeeper's return: the session kept (reconnected),
// or a new one (the old one expired: its lock node went with it, and the
// lock waits again from the end of the queue).
func (r *runner) reportState(ch session.StateChange) {
	switch ch.State {
	case session.Reconnected:
		r.rep.infof("reconnected to ZooKeeper (session 0x%x kept)", ch.SessionID)
	case session.Connected:
		r.rep.infof("connected to ZooKeeper with a new session 0x%x (the old one expired)", ch.SessionID)
	}
}

// queueReport is ": position N in the queue; held by DATA, session 0x...
// for D" on ZooKeeper, "" where it cannot be known (another backend, or
// the listing failed: the next tick tries again).
func (r *runner) queueReport(ctx context.Context) string {
	if r.client == nil {
		return ""
	}
	entries, ours, err := r.listing(ctx)
	if err != nil {
		return ""
	}
	now := time.Now()
	var parts, holders []string
	for i, e := range entries {
		if e.session == ours && e.role != roleHolder && len(parts) == 0 {
			parts = append(parts, fmt.Sprintf("position %d in the queue", i))
		}
		if e.role == roleHolder && e.session != ours {
			h := describeEntry(e)
			if !e.created.IsZero() {
				h += " for " + roundHeld(now.Sub(e.created))
			}
			holders = append(holders, h)
		}
	}
	if holders = atMost(holders); len(holders) > 0 {
		parts = append(parts, "held by "+strings.Join(holders, "; "))
	}
	if len(parts) == 0 {
		return ""
	}
	return ": " + strings.Join(parts, "; ")
}
