package cache

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/zkrecipes/zkrecipes/session"
)

func TestDiff(t *testing.T) {
	node := func(p string, czxid, mzxid int64) Node {
		return Node{Path: p, Stat: session.Stat{Czxid: czxid, Mzxid: mzxid}}
	}
	view := func(nodes ...Node) map[string]Node {
		m := map[string]Node{}
		for _, n := range nodes {
			m[n.Path] = n
		}
		return m
	}
	for _, tc := range []struct {
		name     string
		old, now map[string]Node
		want     []string
	}{
		{"unchanged", view(node("/a", 1, 1), node("/a/b", 2, 5)), view(node("/a", 1, 1), node("/a/b", 2, 5)), nil},
		{"first load, parents first", nil, view(node("/a/b", 2, 2), node("/a", 1, 1), node("/a-b", 3, 3)),
			[]string{"Created /a", "Created /a-b", "Created /a/b"}},
		{"written", view(node("/a", 1, 1)), view(node("/a", 1, 7)), []string{"Changed /a"}},
		{"gone, children first", view(node("/a", 1, 1), node("/a/b", 2, 2), node("/a/b/c", 3, 3)), nil,
			[]string{"Deleted /a/b/c", "Deleted /a/b", "Deleted /a"}},
		// Version 0 both times, same mzxid ordering cannot tell: czxid does.
		{"created again", view(node("/a", 1, 1), node("/a/b", 2, 2)), view(node("/a", 1, 1), node("/a/b", 9, 9)),
			[]string{"Deleted /a/b", "Created /a/b"}},
		{"created again under a parent created again", view(node("/a", 1, 1), node("/a/b", 2, 2)),
			view(node("/a", 8, 8), node("/a/b", 9, 9)),
			[]string{"Deleted /a/b", "Deleted /a", "Created /a", "Created /a/b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, ev := range diff(tc.old, tc.now) {
				got = append(got, fmt.Sprint(ev.Type, " ", ev.Node.Path))
			}
			assert.Equal(t, tc.want, got)
		})
	}
}
