package curator

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/go-zookeeper/zk"
)

// BenchTree creates root and, level by level, fan[i] children under each
// node of level i (named n0, n1, ...), each holding size bytes, in multi
// requests of a hundred; it returns the nodes of the last level. The
// cache benchmarks of both sides load the tree it makes.
func BenchTree(t testing.TB, raw *zk.Conn, root string, fan []int, size int) []string {
	t.Helper()
	data := bytes.Repeat([]byte{'x'}, size)
	acl := zk.WorldACL(zk.PermAll)
	if _, err := raw.Create(root, data, 0, acl); err != nil {
		t.Fatalf("BenchTree: create %s: %v", root, err)
	}
	level := []string{root}
	for _, n := range fan {
		var next []string
		var ops []any
		flush := func() {
			if len(ops) > 0 {
				if _, err := raw.Multi(ops...); err != nil {
					t.Fatalf("BenchTree: multi under %s: %v", root, err)
				}
				ops = ops[:0]
			}
		}
		for _, parent := range level {
			for i := range n {
				p := fmt.Sprintf("%s/n%d", parent, i)
				ops = append(ops, &zk.CreateRequest{Path: p, Data: data, Acl: acl})
				next = append(next, p)
				if len(ops) == 100 {
					flush()
				}
			}
		}
		flush()
		level = next
	}
	return level
}
