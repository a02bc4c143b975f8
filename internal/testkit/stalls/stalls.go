// Package stalls measures when a test process's timers fire late: a
// margin a test asserts between two moments of the process is only as
// good as the process's scheduling, and a stall explains a late timer.
package stalls

import (
	"sync"
	"time"
)

// stallTick is how long the stall watch sleeps at a time; it keeps the
// stalls longer than minStall.
const (
	stallTick = time.Millisecond
	minStall  = 100 * time.Microsecond
)

// Watch measures when the process's timers fire late: a goroutine
// sleeps stallTick at a time and keeps each stretch it overslept. A timer
// fires late only while the process is not run (the OS gives its threads
// no CPU, the runtime stops the world): no timer of the process, a
// lease's included, could fire on time then.
type Watch struct {
	done chan struct{}
	over chan struct{}
	once sync.Once

	mu     sync.Mutex
	stalls []stall
}

// stall is a stretch in which the watch was kept from running.
type stall struct{ from, to time.Time }

// Start starts a Watch; stop it (Longest stops it too).
func Start() *Watch {
	w := &Watch{done: make(chan struct{}), over: make(chan struct{})}
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

// Stop ends the watch; it may be called more than once.
func (w *Watch) Stop() {
	w.once.Do(func() { close(w.done) })
	<-w.over
}

// Longest stops the watch and returns the longest stall that overlaps
// from..to (0 when none does).
func (w *Watch) Longest(from, to time.Time) time.Duration {
	w.Stop()
	var d time.Duration
	for _, s := range w.stalls {
		if s.from.Before(to) && s.to.After(from) {
			d = max(d, s.to.Sub(s.from))
		}
	}
	return d
}
