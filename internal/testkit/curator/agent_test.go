package curator_test

import (
	"path"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/acltest"
	"github.com/zkrecipes/zkrecipes/internal/testkit/curator"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	mutexNode = regexp.MustCompile(`^_c_[0-9a-f-]{36}-lock-\d{10}$`)
	readNode  = regexp.MustCompile(`^_c_[0-9a-f-]{36}-__READ__\d{10}$`)
	writeNode = regexp.MustCompile(`^_c_[0-9a-f-]{36}-__WRIT__\d{10}$`)
)

func TestAgent(t *testing.T) {
	if err := curator.Available(); err != nil {
		harness.Unavailable(t, "%v; %s", err, curator.Hint)
	}
	servers := harness.StartZK(t, 1).Servers()
	t.Run("Commands", func(t *testing.T) { testCommands(t, servers) })
	t.Run("Kill", func(t *testing.T) { testKill(t, servers) })
	t.Run("Recipes", func(t *testing.T) { testRecipes(t, servers) })
	t.Run("DigestAuth", func(t *testing.T) { testDigestAuth(t, servers) })
	t.Run("Writer", func(t *testing.T) { testWriter(t, servers) })
	t.Run("Caches", func(t *testing.T) { testCaches(t, servers) })
	t.Run("Values", func(t *testing.T) { testValues(t, servers) })
	t.Run("CacheBench", func(t *testing.T) { testCacheBench(t, servers) })
}

// testDigestAuth: an agent WithDigestAuth makes its nodes, parents
// included, creator-only; an agent without credentials cannot lock there.
func testDigestAuth(t *testing.T, servers []string) {
	a := curator.Start(t, servers, curator.WithDigestAuth(acltest.User, acltest.Password))
	a.DoExpect(t, "mutex /agent-acl/m", "ok")
	a.DoExpect(t, "acquire", "acquired")
	acltest.RequireTree(t, acltest.Raw(t, servers), "/agent-acl", a.Node(t, "node"))

	b := curator.Start(t, servers)
	b.DoExpect(t, "mutex /agent-acl/m", "ok")
	require.Regexp(t, `^error NoAuthException: .*NoAuth`, b.Do(t, "tryacquire"))
	b.DoExpect(t, "held", "held false")
	a.DoExpect(t, "release", "released")
}

// testCommands runs every command of one agent.
func testCommands(t *testing.T, servers []string) {
	a := curator.Start(t, servers)
	require.NotZero(t, a.Session())

	a.DoExpect(t, "ping", "pong")
	require.Regexp(t, `^session [0-9a-f]+$`, a.Do(t, "session"))
	a.DoExpect(t, "bogus", "error unknown command bogus")
	a.DoExpect(t, "release", "error IllegalStateException: no mutex: send mutex PATH first")
	a.DoExpect(t, "participants", "error IllegalStateException: no lock: send mutex PATH or rw PATH first")
	a.DoExpect(t, "mutex", "error IllegalArgumentException: mutex takes one argument, a path")

	// InterProcessMutex: reentrant on the agent's thread.
	a.DoExpect(t, "mutex /agent/m", "ok")
	a.DoExpect(t, "held", "held false")
	require.Empty(t, a.Node(t, "node"))
	a.DoExpect(t, "tryacquire", "acquired")
	node := a.Node(t, "node")
	require.Equal(t, "/agent/m", path.Dir(node))
	require.Regexp(t, mutexNode, path.Base(node))
	require.Equal(t, []string{path.Base(node)}, a.Participants(t))
	a.Send(t, "acquire") // re-entry: at once, same node
	a.Expect(t, "acquired", curator.ReplyTimeout)
	require.Equal(t, node, a.Node(t, "node"))
	a.DoExpect(t, "release", "released")
	a.DoExpect(t, "held", "held true")
	a.DoExpect(t, "release", "released")
	a.DoExpect(t, "held", "held false")
	require.Empty(t, a.Participants(t))
	a.DoExpect(t, "acquire 1000", "acquired")
	a.DoExpect(t, "release", "released")
	a.DoExpect(t, "release", "error IllegalMonitorStateException: You do not own the lock: /agent/m")

	// InterProcessReadWriteLock: no upgrade, downgrade allowed.
	a.DoExpect(t, "rw /agent/rw", "ok")
	a.DoExpect(t, "read-acquire", "acquired")
	rn := a.Node(t, "read-node")
	require.Regexp(t, readNode, path.Base(rn))
	require.Empty(t, a.Node(t, "write-node"))
	a.DoExpect(t, "write-tryacquire", "locked")
	a.DoExpect(t, "write-acquire 100", "locked")
	a.DoExpect(t, "read-tryacquire", "acquired") // re-entry
	a.DoExpect(t, "read-release", "released")
	a.DoExpect(t, "read-release", "released")
	a.DoExpect(t, "write-acquire", "acquired")
	wn := a.Node(t, "write-node")
	require.Regexp(t, writeNode, path.Base(wn))
	a.DoExpect(t, "read-acquire 100", "acquired") // downgrade
	rn = a.Node(t, "read-node")
	require.Equal(t, []string{path.Base(wn), path.Base(rn)}, a.Participants(t))
	require.Equal(t, "participants "+path.Base(rn), a.Do(t, "read-participants"))
	require.Equal(t, "participants "+path.Base(wn), a.Do(t, "write-participants"))
	a.DoExpect(t, "write-release", "released")
	a.DoExpect(t, "read-release", "released")
	require.Empty(t, a.Participants(t))
	a.DoExpect(t, "write-tryacquire", "acquired")
	a.DoExpect(t, "write-release", "released")

	// "participants" follows the lock made last.
	a.DoExpect(t, "mutex /agent/m", "ok")
	a.DoExpect(t, "acquire", "acquired")
	require.Len(t, a.Participants(t), 1)
	a.DoExpect(t, "quit", "bye")
	select {
	case <-a.Exited():
	case <-time.After(curator.ReplyTimeout):
		t.Fatal("the agent is still running after quit")
	}
}

// testKill: Kill ends the JVM at once.
func testKill(t *testing.T, servers []string) {
	a := curator.Start(t, servers, curator.WithName("victim"))
	require.Equal(t, "victim", a.Name())
	a.DoExpect(t, "mutex /agent/k", "ok")
	a.Send(t, "acquire")
	a.Expect(t, "acquired", curator.ReplyTimeout)
	a.Kill()
	select {
	case <-a.Exited():
	default:
		t.Fatal("the agent is still running after Kill")
	}
}
