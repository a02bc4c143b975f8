package curator_test

import (
	"path"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/curator"
)

var (
	leaseNode = regexp.MustCompile(`^_c_[0-9a-f-]{36}-lease-\d{10}$`)
	latchNode = regexp.MustCompile(`^_c_[0-9a-f-]{36}-latch-\d{10}$`)
)

// waitList polls cmd's list (reply word prefix) until it has n items.
func waitList(t *testing.T, a *curator.Agent, cmd, prefix string, n int) []string {
	t.Helper()
	deadline := time.Now().Add(curator.ReplyTimeout)
	for {
		items := a.List(t, cmd, prefix)
		if len(items) == n {
			return items
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %q lists %q, want %d items", a.Name(), cmd, items, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitReply polls cmd until its reply is want.
func waitReply(t *testing.T, a *curator.Agent, cmd, want string) {
	t.Helper()
	deadline := time.Now().Add(curator.ReplyTimeout)
	for {
		got := a.Do(t, cmd)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: reply to %q is still %q, want %q", a.Name(), cmd, got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// testRecipes runs the revocation, semaphore and leader commands on two
// agents, Curator against Curator.
func testRecipes(t *testing.T, servers []string) {
	a := curator.Start(t, servers, curator.WithName("a"))
	b := curator.Start(t, servers, curator.WithName("b"))
	const wait = "10000"

	t.Run("Revocation", func(t *testing.T) {
		a.DoExpect(t, "await-revoked 0", "error IllegalStateException: no revocable mutex: send revocable PATH first")
		a.DoExpect(t, "revocable /agent/rev", "ok")
		a.DoExpect(t, "acquire", "acquired")
		node := a.Node(t, "node")
		a.DoExpect(t, "revocations", "revocations 0")
		a.DoExpect(t, "await-revoked 0", "not-revoked")
		b.DoExpect(t, "revoke "+node, "sent")
		a.DoExpect(t, "await-revoked "+wait, "revoked")
		a.DoExpect(t, "revocations", "revocations 1")
		a.DoExpect(t, "await-revoked 0", "not-revoked") // reported once
		a.DoExpect(t, "held", "held true")              // the holder decides
		a.DoExpect(t, "release", "released")
		b.DoExpect(t, "revoke /agent/rev/gone", "sent") // Revoker ignores a missing node
		a.DoExpect(t, "mutex /agent/rev", "ok")
		a.DoExpect(t, "revocations", "error IllegalStateException: no revocable mutex: send revocable PATH first")
	})

	t.Run("Semaphore", func(t *testing.T) {
		a.DoExpect(t, "sem-held", "held 0")
		a.DoExpect(t, "sem-release", "error IllegalStateException: no semaphore: send semaphore PATH MAX first")
		a.DoExpect(t, "semaphore /agent/sem", "error IllegalArgumentException: semaphore takes two arguments, a path and the max leases (or count)")
		a.DoExpect(t, "semaphore /agent/sem 2", "ok")
		b.DoExpect(t, "semaphore /agent/sem 2", "ok")
		a.DoExpect(t, "sem-acquire 2", "acquired")
		a.DoExpect(t, "sem-held", "held 2")
		nodes := a.List(t, "sem-nodes", "nodes")
		require.Len(t, nodes, 2)
		for _, n := range nodes {
			require.Regexp(t, leaseNode, n)
		}
		b.DoExpect(t, "sem-acquire 1 100", "locked")
		require.ElementsMatch(t, nodes, b.List(t, "sem-participants", "participants"))
		b.Send(t, "sem-acquire")
		b.ExpectNoReply(t, 300*time.Millisecond)
		a.DoExpect(t, "sem-release", "released 2")
		b.Expect(t, "acquired", curator.ReplyTimeout)
		b.DoExpect(t, "sem-held", "held 1")
		b.DoExpect(t, "sem-release", "released 1")
		b.DoExpect(t, "sem-release", "released 0")
		require.Empty(t, a.List(t, "sem-participants", "participants"))
	})

	t.Run("SharedCount", func(t *testing.T) {
		a.DoExpect(t, "count-get", "error IllegalStateException: no shared count: send count PATH SEED first")
		a.DoExpect(t, "count /agent/count 1", "ok")
		a.DoExpect(t, "count-get", "count 1")
		a.DoExpect(t, "semaphore /agent/counted count", "ok")
		b.DoExpect(t, "semaphore /agent/counted 5", "ok") // its own max: 5
		a.DoExpect(t, "sem-acquire", "acquired")
		a.DoExpect(t, "sem-acquire 1 100", "locked") // the count says 1
		b.DoExpect(t, "count /agent/count 7", "ok")  // the node exists: 7 is only a seed
		b.DoExpect(t, "count-get", "count 1")
		b.DoExpect(t, "count-set 2", "ok")
		waitReply(t, a, "count-get", "count 2")
		a.DoExpect(t, "sem-acquire 1 "+wait, "acquired")
		a.DoExpect(t, "sem-release", "released 2")
	})

	t.Run("Contend", func(t *testing.T) {
		a.DoExpect(t, "contend mutex /agent/bench 2", "error IllegalArgumentException: contend takes mutex PATH SESSIONS N or semaphore PATH SESSIONS N MAX")
		a.DoExpect(t, "contend semaphore /agent/bench 2 10", "error IllegalArgumentException: contend takes mutex PATH SESSIONS N or semaphore PATH SESSIONS N MAX")
		a.DoExpect(t, "contend mutex /agent/bench 0 10", "error IllegalArgumentException: contend: SESSIONS, N and MAX must be positive")
		require.Positive(t, a.Contend(t, "mutex", "/agent/bench/m", 3, 30, 0, curator.ReplyTimeout))
		require.Positive(t, a.Contend(t, "semaphore", "/agent/bench/s", 3, 30, 2, curator.ReplyTimeout))
		// Every acquisition was released: nothing is left in the queues.
		a.DoExpect(t, "mutex /agent/bench/m", "ok")
		require.Empty(t, a.Participants(t))
		a.DoExpect(t, "semaphore /agent/bench/s 2", "ok")
		require.Empty(t, a.List(t, "sem-participants", "participants"))
	})

	t.Run("SemaphoreMutex", func(t *testing.T) {
		a.DoExpect(t, "semmutex /agent/sm", "ok")
		b.DoExpect(t, "semmutex /agent/sm", "ok")
		a.DoExpect(t, "semmutex-acquire", "acquired")
		a.DoExpect(t, "semmutex-held", "held true")
		b.DoExpect(t, "semmutex-acquire 100", "locked")
		b.DoExpect(t, "semmutex-held", "held false")
		b.Send(t, "semmutex-acquire")
		b.ExpectNoReply(t, 300*time.Millisecond)
		a.DoExpect(t, "semmutex-release", "released")
		b.Expect(t, "acquired", curator.ReplyTimeout)
		b.DoExpect(t, "semmutex-release", "released")
	})

	t.Run("LeaderLatch", func(t *testing.T) {
		const p = "/agent/latch"
		a.DoExpect(t, "latch-has", "error IllegalStateException: no latch: send latch PATH ID first")
		a.DoExpect(t, "latch "+p+" alpha", "ok")
		a.DoExpect(t, "latch-await "+wait, "leading")
		a.DoExpect(t, "latch-has", "leadership true")
		require.Equal(t, p, path.Dir(a.Node(t, "latch-node")))
		require.Regexp(t, latchNode, path.Base(a.Node(t, "latch-node")))
		a.DoExpect(t, "latch "+p+" again", "error IllegalStateException: a latch is running: send latch-close first")
		b.DoExpect(t, "latch "+p+" beta", "ok")
		require.Equal(t, []string{"alpha", "beta"}, waitList(t, b, "latch-participants", "participants", 2))
		b.DoExpect(t, "latch-await 100", "not-leading")
		require.Equal(t, "alpha", b.Value(t, "latch-leader", "leader"))
		b.Send(t, "latch-await")
		b.ExpectNoReply(t, 300*time.Millisecond)
		a.DoExpect(t, "latch-close", "closed")
		b.Expect(t, "leading", curator.ReplyTimeout)
		a.DoExpect(t, "latch-has", "leadership false")
		require.Equal(t, "beta", a.Value(t, "latch-leader", "leader"))
		a.DoExpect(t, "latch "+p+" alpha", "ok") // a new latch, at the back
		require.Equal(t, []string{"beta", "alpha"}, waitList(t, a, "latch-participants", "participants", 2))
		a.DoExpect(t, "latch-close", "closed")
		b.DoExpect(t, "latch-close", "closed")
		// LeaderLatch.close deletes its node in the background.
		waitReply(t, a, "latch-leader", "leader none")
		b.DoExpect(t, "latch-await 0", "not-leading")
		b.DoExpect(t, "latch-await", "error EOFException")
	})

	t.Run("LeaderSelector", func(t *testing.T) {
		const p = "/agent/selector"
		a.DoExpect(t, "selector "+p, "error IllegalArgumentException: selector takes a path, an id and optionally requeue")
		a.DoExpect(t, "selector "+p+" alpha requeue", "ok")
		a.DoExpect(t, "selector-await "+wait, "leading")
		a.DoExpect(t, "selector-has", "leadership true")
		a.DoExpect(t, "selector "+p+" x", "error IllegalStateException: a selector is running: send selector-close first")
		b.DoExpect(t, "selector "+p+" beta", "ok")
		require.Equal(t, []string{"alpha", "beta"}, waitList(t, b, "selector-participants", "participants", 2))
		b.DoExpect(t, "selector-await 100", "not-leading")
		require.Equal(t, "alpha", b.Value(t, "selector-leader", "leader"))
		b.DoExpect(t, "selector-release", "error IllegalStateException: not leading: takeLeadership is not running")

		a.DoExpect(t, "selector-release", "released") // autoRequeue: alpha queues again
		b.DoExpect(t, "selector-await "+wait, "leading")
		require.Equal(t, []string{"beta", "alpha"}, waitList(t, a, "selector-participants", "participants", 2))
		a.DoExpect(t, "selector-has", "leadership false")
		b.DoExpect(t, "selector-release", "released") // no autoRequeue: beta is out
		a.DoExpect(t, "selector-await "+wait, "leading")
		require.Equal(t, []string{"alpha"}, waitList(t, b, "selector-participants", "participants", 1))
		b.DoExpect(t, "selector-requeue", "requeued true")
		require.Equal(t, []string{"alpha", "beta"}, waitList(t, b, "selector-participants", "participants", 2))
		a.DoExpect(t, "selector-close", "closed") // interrupts takeLeadership
		b.DoExpect(t, "selector-await "+wait, "leading")
		require.Equal(t, "beta", a.Value(t, "selector-leader", "leader"))
		b.DoExpect(t, "selector-close", "closed")
		b.DoExpect(t, "selector-close", "error IllegalStateException: the selector is not running")
		require.True(t, strings.HasPrefix(b.Do(t, "selector-leader"), "leader "))
	})
}
