package mutex_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/session"
)

func TestMain(m *testing.M) {
	zktest.RunHolderIfChild(newHolderLocker) // a child process of TestHolderKilled
	zktest.Main(m)
}

const waitLimit = zktest.WaitLimit

var (
	sharedServers = zktest.Shared
	connect       = zktest.Connect
	ctxT          = zktest.Ctx
	waitForNodes  = zktest.WaitForNodes
)

func newMutex(t testing.TB, c *session.Client, path string) *mutex.Mutex {
	t.Helper()
	m, err := mutex.New(c, path)
	require.NoError(t, err)
	return m
}
