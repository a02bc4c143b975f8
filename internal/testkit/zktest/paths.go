package zktest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// runID tells this test process's nodes from an earlier process's on a
// shared server.
var runID = time.Now().UnixNano()

// paths holds the root of each running test.
var paths struct {
	sync.Mutex
	of   map[testing.TB]string
	runs int
}

// Path is a node path of t's own, under pkg: the same for every call
// in one run of t, another for each run (go test -count=N runs a test N
// times on one shared server), so a test's fixed names never meet an
// earlier run's nodes. A test's own number tells its runs apart: its
// testing.T's address does not, as a later run may get the memory of an
// earlier one.
func Path(t testing.TB, pkg, name string) string {
	paths.Lock()
	defer paths.Unlock()
	root, ok := paths.of[t]
	if !ok {
		if paths.of == nil {
			paths.of = map[testing.TB]string{}
		}
		paths.runs++
		root = fmt.Sprintf("/%s-test-%d/%s-%d", pkg, runID, strings.ReplaceAll(t.Name(), "/", "_"), paths.runs)
		paths.of[t] = root
		t.Cleanup(func() {
			paths.Lock()
			defer paths.Unlock()
			delete(paths.of, t)
		})
	}
	return root + "/" + name
}
