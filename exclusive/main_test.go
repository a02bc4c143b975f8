package exclusive_test

import (
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
)

func TestMain(m *testing.M) { zktest.Main(m) }

var (
	sharedServers = zktest.Shared
	connect       = zktest.Connect
	ctxT          = zktest.Ctx
)
