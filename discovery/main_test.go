package discovery_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
)

func TestMain(m *testing.M) { zktest.Main(m) }

var (
	sharedServers = zktest.Shared
	ctxT          = zktest.Ctx
)

// run tells this test process's nodes from an earlier process's on a
// shared server.
var run = time.Now().UnixNano()

// bases numbers the base paths basePath gives: go test -count=N runs a
// test N times on one server, under one name.
var bases atomic.Int64

// basePath is a registry root of t's own (of this run of it) on the
// shared server. The agent has no namespace, so neither do the clients.
func basePath(t testing.TB) string {
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	return fmt.Sprintf("/discovery-test-%d-%d-%s", run, bases.Add(1), name)
}
