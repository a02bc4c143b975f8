package zktest

import (
	"runtime"
	"strings"
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

// Goroutines returns the stack of every goroutine of the process, one
// string each, the caller's first (runtime.Stack's text, split).
func Goroutines() []string {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Split(string(buf[:n]), "\n\n")
		}
		buf = make([]byte, 2*len(buf))
	}
}
