package curator

import (
	"fmt"
	"strconv"
	"testing"
	"time"
)

// BarrierState is what a barrier member's last wait in the agent did so
// far (CuratorBarriers.java's "barrier-state" reply).
type BarrierState string

// The states of a member's wait; an error is "error:" and the exception's
// class.
const (
	BarrierIdle    BarrierState = "idle"    // no wait started yet
	BarrierWaiting BarrierState = "waiting" // enter, leave or waitOnBarrier blocks
	BarrierThrough BarrierState = "through" // it returned
)

// DoubleBarrier makes member name of the agent a DistributedDoubleBarrier
// on path for qty members (each name is a member of its own, on the
// agent's one session).
func (a *Agent) DoubleBarrier(t testing.TB, name, path string, qty int) {
	t.Helper()
	a.DoExpect(t, fmt.Sprintf("dbarrier %s %s %d", name, path, qty), "ok")
}

// Enter starts member name's enter() on a thread of its own; BarrierState
// and AwaitBarrier tell how it goes.
func (a *Agent) Enter(t testing.TB, name string) {
	t.Helper()
	a.DoExpect(t, "denter "+name, "started")
}

// Leave starts member name's leave() on a thread of its own.
func (a *Agent) Leave(t testing.TB, name string) {
	t.Helper()
	a.DoExpect(t, "dleave "+name, "started")
}

// Barrier makes member name a DistributedBarrier on path.
func (a *Agent) Barrier(t testing.TB, name, path string) {
	t.Helper()
	a.DoExpect(t, fmt.Sprintf("barrier %s %s", name, path), "ok")
}

// SetBarrier runs setBarrier on member name's DistributedBarrier.
func (a *Agent) SetBarrier(t testing.TB, name string) {
	t.Helper()
	a.DoExpect(t, "barrier-set "+name, "ok")
}

// RemoveBarrier runs removeBarrier on member name's DistributedBarrier.
func (a *Agent) RemoveBarrier(t testing.TB, name string) {
	t.Helper()
	a.DoExpect(t, "barrier-remove "+name, "ok")
}

// WaitOnBarrier starts member name's waitOnBarrier() on a thread of its
// own.
func (a *Agent) WaitOnBarrier(t testing.TB, name string) {
	t.Helper()
	a.DoExpect(t, "barrier-wait "+name, "started")
}

// BarrierState is member name's state now.
func (a *Agent) BarrierState(t testing.TB, name string) BarrierState {
	t.Helper()
	return BarrierState(a.Value(t, "barrier-state "+name, "state"))
}

// AwaitBarrier waits, at most within (measured in the JVM), until member
// name's wait has ended, and returns its state (BarrierWaiting if it has
// not ended).
func (a *Agent) AwaitBarrier(t testing.TB, name string, within time.Duration) BarrierState {
	t.Helper()
	return BarrierState(a.Value(t, "barrier-await "+name+" "+strconv.FormatInt(within.Milliseconds(), 10), "state"))
}
