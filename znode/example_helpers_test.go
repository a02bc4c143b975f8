package znode_test

import (
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
)

// TestMain stops the ZooKeeper the examples share (zktest.SharedForExample)
// and checks for leaked goroutines, as in the other ZooKeeper packages.
func TestMain(m *testing.M) { zktest.Main(m) }

// exampleServers starts (once) the ZooKeeper the examples use; in your code
// these are your ensemble's addresses.
var exampleServers = zktest.SharedForExample
