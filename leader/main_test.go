package leader_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

func TestMain(m *testing.M) {
	zktest.RunHolderIfChild(newHolderElection) // a child process of the SIGKILL and SIGSTOP tests
	zktest.Main(m)
}

const waitLimit = zktest.WaitLimit

var (
	sharedServers = zktest.Shared
	connect       = zktest.Connect
	ctxT          = zktest.Ctx
)

// newHolderElection is the election a holder child process campaigns in:
// kind is its participant id.
func newHolderElection(c *session.Client, path, kind string) (recipes.Locker, error) {
	return leader.NewLatch(c, path, kind)
}

func newLatch(t testing.TB, c *session.Client, path, id string) *leader.Election {
	t.Helper()
	e, err := leader.NewLatch(c, path, id)
	require.NoError(t, err)
	return e
}
