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

// AwaitProven waits until c has proven its session (its first round of
// proof is done), failing t after WaitLimit: no round is then due for a
// quarter of the session timeout, so a test that counts the bytes of the
// client's next requests (harness.Proxy.ResetAfter) meets none of the
// client's own among them (pings aside, every third of the timeout).
func AwaitProven(t testing.TB, c *session.Client) {
	t.Helper()
	deadline := time.Now().Add(WaitLimit)
	for {
		if s := c.CurrentSession(); s != nil {
			if _, ok := s.ServerDeadline(); ok {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session was not proven within %v", WaitLimit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
