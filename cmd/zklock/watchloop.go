package main

import (
	"context"
	"errors"
	"time"

	"github.com/zkrecipes/zkrecipes/cache"
	"github.com/zkrecipes/zkrecipes/session"
)

// loop prints the cache's events until ctx ends (a signal: exit 0), or
// until ZooKeeper is out of reach for --timeout: the first read not done
// within --timeout of start, or no connection again within --timeout of
// losing it (exit 69). The states are the client's, followed here only to
// time a loss of the connection (the cache says Stale and Fresh itself);
// now is the client's state when they were subscribed to.
func (w *watcher) loop(ctx context.Context, x *cache.Cache, states <-chan session.StateChange, start time.Time, now session.State) int {
	var firstRead <-chan time.Time // fires if the first read is not done in time
	if w.o.timeout > 0 {
		t := time.NewTimer(time.Until(start.Add(w.o.timeout)))
		defer t.Stop()
		firstRead = t.C
	}
	var away outage
	defer away.end()
	if now != session.Connected && now != session.Reconnected && now != session.ReadOnly && w.o.timeout > 0 {
		// Lost between Connect and Subscribe: its Suspended came before.
		away.begin(time.Now(), w.o.timeout, errors.New("the connection was lost"))
	}
	events := x.Events()
	for {
		if w.out.pending() {
			// Flush only once the events at hand are printed: one write
			// for the first load of a large tree, not one per node.
			select {
			case ev, ok := <-events:
				if code, done := w.handle(ctx, ev, ok); done {
					return code
				}
				continue
			default:
			}
			if err := w.out.flush(); err != nil {
				return w.outputFailed(err)
			}
		}
		select {
		case ev, ok := <-events:
			if code, done := w.handle(ctx, ev, ok); done {
				return code
			}
		case ch, ok := <-states:
			if !ok {
				states = nil // ctx ended: the events' channel closes too
				continue
			}
			w.follow(&away, ch)
		case <-firstRead:
			firstRead = nil
			if x.Freshness().Initialized {
				continue // done in time; its events may still be on their way
			}
			why := "the first read of " + w.o.path + " did not finish"
			if !x.Freshness().Connected {
				why = "no ZooKeeper server could be reached"
			}
			w.rep.errorf("watch %s: %s within --timeout %v", w.o.path, why, w.o.timeout)
			return exitUnavailable
		case <-away.expired():
			w.rep.errorf("watch %s: no ZooKeeper server could be reached within --timeout %v of losing the connection at %s: %v",
				w.o.path, w.o.timeout, away.since.Format("15:04:05.000"), away.why)
			return exitUnavailable
		case <-ctx.Done():
			return exitOK
		}
	}
}

// handle prints one event. done is true when the events' channel closed
// (ok false), which only the end of ctx does: the watch was interrupted.
func (w *watcher) handle(ctx context.Context, ev cache.Event, ok bool) (code int, done bool) {
	if !ok {
		if ctx.Err() == nil {
			// Not reached: only ctx's end or the client's Close, which is
			// deferred in run, ends the cache.
			w.rep.errorf("watch %s: the cache ended", w.o.path)
			return exitSoftware, true
		}
		return exitOK, true
	}
	if !w.o.json && ev.Type == cache.Refused {
		w.rep.errorf("watch %s: refused: %s is not shown: %v", w.o.path, ev.Node.Path, ev.Err)
		return exitOK, false
	}
	if !w.o.json && (ev.Type == cache.Stale || ev.Type == cache.Fresh) {
		// stdout first: what changed while away comes before "fresh".
		if err := w.out.flush(); err != nil {
			return w.outputFailed(err), true
		}
		if ev.Type == cache.Stale {
			w.rep.errorf("watch %s: stale: the connection to ZooKeeper was suspended; changes are printed once it is read again", w.o.path)
		} else {
			w.rep.errorf("watch %s: fresh: read again; what changed meanwhile is printed above", w.o.path)
		}
		return exitOK, false
	}
	n, err := w.out.event(ev)
	if err != nil {
		return w.outputFailed(err), true
	}
	if ev.Type == cache.Initialized {
		w.rep.infof("watch %s: the current state is printed (%d nodes); changes follow", w.o.path, n)
	}
	return exitOK, false
}

// follow times a loss of the connection, and reports the states with -v.
func (w *watcher) follow(away *outage, ch session.StateChange) {
	switch ch.State {
	case session.Suspended, session.Lost:
		if ch.State == session.Lost {
			w.rep.infof("session 0x%x lost: %v", ch.SessionID, ch.Err)
		} else {
			w.rep.infof("connection suspended: %v", ch.Err)
		}
		if w.o.timeout > 0 {
			away.begin(ch.Time, w.o.timeout, ch.Err)
		}
	case session.Connected, session.Reconnected, session.ReadOnly:
		how := "reconnected"
		switch ch.State {
		case session.Connected:
			how = "connected"
		case session.ReadOnly:
			how = "connected (read-only server)"
		}
		w.rep.infof("%s to ZooKeeper (session 0x%x)", how, ch.SessionID)
		away.end()
	}
}

func (w *watcher) outputFailed(err error) int {
	w.rep.errorf("watch %s: writing the output: %v", w.o.path, err)
	return exitIOErr
}

// outage times one loss of the connection, from its first Suspended or
// Lost to the next connection.
type outage struct {
	timer *time.Timer // nil while connected
	since time.Time
	why   error
}

// begin starts the clock, unless it runs already (Lost follows
// Suspended: the outage began with the suspension).
func (o *outage) begin(at time.Time, timeout time.Duration, why error) {
	if o.timer != nil {
		return
	}
	o.since, o.why = at, why
	o.timer = time.NewTimer(time.Until(at.Add(timeout)))
}

// end stops the clock.
func (o *outage) end() {
	if o.timer != nil {
		o.timer.Stop()
		o.timer = nil
	}
}

// expired fires when the outage lasted its timeout (nil while connected:
// a receive from it blocks).
func (o *outage) expired() <-chan time.Time {
	if o.timer == nil {
		return nil
	}
	return o.timer.C
}
