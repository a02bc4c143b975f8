package zktest

import (
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/session"
)

// AwaitState reads states (a client's Subscribe) until want, bounded by
// WaitLimit.
func AwaitState(t testing.TB, states <-chan session.StateChange, want session.State) {
	t.Helper()
	timeout := time.NewTimer(WaitLimit)
	defer timeout.Stop()
	for {
		select {
		case ch := <-states:
			if ch.State == want {
				return
			}
		case <-timeout.C:
			t.Fatalf("no %v within %v", want, WaitLimit)
		}
	}
}
