package semaphore_test

import (
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
)

func TestMain(m *testing.M) { zktest.Main(m) }

const waitLimit = zktest.WaitLimit

var (
	sharedServers = zktest.Shared
	connect       = zktest.Connect
	ctxT          = zktest.Ctx
)
