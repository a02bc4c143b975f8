package zktest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/session"
)

// Children lists a lock path (nil when it does not exist).
func Children(t testing.TB, c *session.Client, path string) []string {
	t.Helper()
	kids, _, err := c.Children(Ctx(t), path)
	if err != nil {
		return nil
	}
	return kids
}

// WaitForNodes waits (bounded by WaitLimit) until path has n children.
func WaitForNodes(t testing.TB, c *session.Client, path string, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return len(Children(t, c, path)) == n },
		WaitLimit, 20*time.Millisecond, "want %d nodes under %s, have %v", n, path, Children(t, c, path))
}

// AwaitState reads states until want, bounded by WaitLimit.
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
