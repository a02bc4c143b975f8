package mutex_test

import (
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/recipes/locktest"
)

func TestMain(m *testing.M) {
	locktest.RunHolderIfChild(newHolderLocker) // a child process of TestHolderKilled
	zktest.Main(m)
}

const waitLimit = zktest.WaitLimit

var (
	sharedServers = zktest.Shared
	connect       = zktest.Connect
	ctxT          = zktest.Ctx
)
