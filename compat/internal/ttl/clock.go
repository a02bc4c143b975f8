package ttl

import (
	"container/heap"
	"sync"
	"time"
)

// clock wakes the process's watchdogs, each when its next event is due
// (its deadline, or its next renewal), from one runtime timer. A timer of
// each lease's own would be set at every Acquire and stopped at every
// Release, and when such a timer is the earliest of its P the runtime
// wakes another thread to watch it: on a lock held for a few hundred
// microseconds that was most of what a holding cost the client. The clock
// resets its timer only for an event earlier than the one it is set for,
// and leaves it set when that event is gone (it then fires for nothing).
type clock struct {
	mu    sync.Mutex
	due   dueHeap
	timer *time.Timer // made at the first event
	at    time.Time   // when timer fires; zero when it is not set
}

// theClock is the process's clock.
var theClock clock

// set (re)schedules w's wake-up at at.
func (c *clock) set(w *watchdog, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w.at = at
	if w.index < 0 {
		heap.Push(&c.due, w)
	} else {
		heap.Fix(&c.due, w.index)
	}
	switch {
	case c.timer == nil:
		c.timer = time.AfterFunc(time.Until(at), c.fire)
	case c.at.IsZero() || at.Before(c.at):
		c.timer.Reset(time.Until(at))
	default:
		return
	}
	c.at = at
}

// remove unschedules w.
func (c *clock) remove(w *watchdog) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if w.index >= 0 {
		heap.Remove(&c.due, w.index)
	}
}

// fire wakes the watchdogs whose time has come, and sets the timer for the
// next one.
func (c *clock) fire() {
	var woken []*watchdog
	c.mu.Lock()
	now := time.Now()
	for len(c.due) > 0 && !c.due[0].at.After(now) {
		woken = append(woken, heap.Pop(&c.due).(*watchdog))
	}
	c.at = time.Time{}
	if len(c.due) > 0 {
		c.at = c.due[0].at
		c.timer.Reset(time.Until(c.at))
	}
	c.mu.Unlock()
	for _, w := range woken {
		w.wake()
	}
}

// dueHeap orders watchdogs by their wake-up time (heap.Interface).
type dueHeap []*watchdog

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h dueHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (h *dueHeap) Push(x any) {
	w := x.(*watchdog)
	w.index = len(*h)
	*h = append(*h, w)
}

func (h *dueHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	w.index = -1
	return w
}
