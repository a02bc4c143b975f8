package counter_test

import (
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
)

func TestMain(m *testing.M) { zktest.Main(m) }

const waitLimit = zktest.WaitLimit

var (
	sharedServers = zktest.Shared
	ctxT          = zktest.Ctx
)

// pathOf is a node path of the test's own, for this run of it.
func pathOf(t testing.TB, name string) string { return zktest.Path(t, "counter", name) }
