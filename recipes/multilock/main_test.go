package multilock_test

import (
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
)

// TestMain stops the shared ZooKeeper and checks for leaked goroutines.
func TestMain(m *testing.M) { zktest.Main(m) }

// waitLimit bounds every wait in the tests; nothing asserts on durations.
const waitLimit = zktest.WaitLimit

var ctxT = zktest.Ctx
