package tracetest

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
)

// stallTick is how long the stall watch sleeps at a time; it keeps the
// stalls longer than minStall.
const (
	stallTick = time.Millisecond
	minStall  = 100 * time.Microsecond
)

// stallWatch measures when the process's timers fire late: a goroutine
// sleeps stallTick at a time and keeps each stretch it overslept. A timer
// fires late only while the process is not run (the OS gives its threads
// no CPU, the runtime stops the world): no timer of the process, a
// lease's included, could fire on time then.
type stallWatch struct {
	done chan struct{}
	over chan struct{}
	once sync.Once

	mu     sync.Mutex
	stalls []stall
}

// stall is a stretch in which the watch was kept from running.
type stall struct{ from, to time.Time }

// watchStalls starts a stallWatch; stop it (longest stops it too).
func watchStalls() *stallWatch {
	w := &stallWatch{done: make(chan struct{}), over: make(chan struct{})}
	go func() {
		defer close(w.over)
		for {
			select {
			case <-w.done:
				return
			default:
			}
			due := time.Now().Add(stallTick)
			time.Sleep(stallTick)
			if woke := time.Now(); woke.Sub(due) > minStall {
				w.mu.Lock()
				w.stalls = append(w.stalls, stall{due, woke})
				w.mu.Unlock()
			}
		}
	}()
	return w
}

// stop ends the watch; it may be called more than once.
func (w *stallWatch) stop() {
	w.once.Do(func() { close(w.done) })
	<-w.over
}

// longest stops the watch and returns the longest stall that overlaps
// from..to (0 when none does).
func (w *stallWatch) longest(from, to time.Time) time.Duration {
	w.stop()
	var d time.Duration
	for _, s := range w.stalls {
		if s.from.Before(to) && s.to.After(from) {
			d = max(d, s.to.Sub(s.from))
		}
	}
	return d
}

// timeEnds returns a copy of tr whose LeaseEnd also notes when it was
// called, and what gives the time of its last call (zero before any).
func timeEnds(tr *locktrace.Trace) (*locktrace.Trace, func() time.Time) {
	var at atomic.Pointer[time.Time]
	timed := *tr
	timed.LeaseEnd = func(i locktrace.LeaseEndInfo) {
		now := time.Now()
		at.Store(&now)
		tr.LeaseEnd(i)
	}
	return &timed, func() time.Time {
		if p := at.Load(); p != nil {
			return *p
		}
		return time.Time{}
	}
}
