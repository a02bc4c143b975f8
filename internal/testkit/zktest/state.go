package zktest

import (
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/session"
)

// AwaitState reads a client's state changes (session.Client.Subscribe)
// until want, failing t when the channel closes or after WaitLimit.
func AwaitState(t testing.TB, states <-chan session.StateChange, want session.State) {
	t.Helper()
	timeout := time.NewTimer(WaitLimit)
	defer timeout.Stop()
	for {
		select {
		case ch, ok := <-states:
			if !ok {
				t.Fatalf("state channel closed before %v", want)
			}
			if ch.State == want {
				return
			}
		case <-timeout.C:
			t.Fatalf("no %v within %v", want, WaitLimit)
		}
	}
}
