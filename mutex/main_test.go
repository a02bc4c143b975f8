package mutex_test

import (
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
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
)
