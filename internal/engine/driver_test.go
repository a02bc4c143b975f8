package engine

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

func TestMain(m *testing.M) { zktest.Main(m) } // also stops the shared server of server_*_test.go

const uuidA = "0f8fad5b-d9cb-469f-a165-70867728950e"

func TestSortChildren(t *testing.T) {
	p := func(kind string, seq int) string { return fmt.Sprintf("_c_%s-%s%010d", uuidA, kind, seq) }
	names := []string{
		p("lock-", 10), "not-a-lock-node", p("lock-", 2), "k__lock__0000000005", p("lock-", 1000000000), p("lock-", 7),
	}
	got := SortChildren(names, "lock-", "__lock__")
	var order []int64
	for _, c := range got {
		order = append(order, c.Seq)
	}
	assert.Equal(t, []int64{2, 5, 7, 10, 1000000000}, order, "numeric order, foreign kinds included, junk left out")

	// A downgraded read node carries its writer's sequence: it sorts with
	// it, before every node created later.
	w := p("__WRIT__", 4)
	r := fmt.Sprintf("_c_%s-__READ__%010d", "ffffffff-d9cb-469f-a165-70867728950e", 4)
	got = SortChildren([]string{p("__WRIT__", 5), r, w, p("__READ__", 3)}, "__WRIT__", "__READ__")
	assert.Equal(t, []string{p("__READ__", 3), w, r, p("__WRIT__", 5)}, names4(got))
	assert.Equal(t, 2, indexOf(got, r))
	assert.Equal(t, -1, indexOf(got, "missing"))
}

func names4(cs []Child) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return out
}

func TestLeaseDriver(t *testing.T) {
	kids := SortChildren([]string{"lock-0000000001", "lock-0000000002", "lock-0000000003", "lock-0000000004"}, "lock-")
	for _, tc := range []struct {
		leases, ours int
		want         Decision
	}{
		{1, 0, Decision{Owns: true}},
		{1, 1, Decision{Watch: "lock-0000000001", FastHandoff: true}},                               // predecessor is the head
		{1, 2, Decision{Watch: "lock-0000000002", Refresh: "lock-0000000001", RefreshIsHead: true}}, // refresh when the head goes
		{1, 3, Decision{Watch: "lock-0000000003", Refresh: "lock-0000000002"}},                      // a waiter ahead: list again
		{2, 1, Decision{Owns: true}},
		{2, 2, Decision{Watch: "lock-0000000001"}}, // semaphore: never fast (the other lease holder may stay)
		{2, 3, Decision{Watch: "lock-0000000002"}},
		{4, 3, Decision{Owns: true}},
	} {
		got, err := LeaseDriver{Leases: tc.leases, Kind: "lock-", Lookahead: true}.Decide(kids, tc.ours)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "leases %d ours %d", tc.leases, tc.ours)
		// Without lookahead a waiter watches its predecessor only.
		plain, err := LeaseDriver{Leases: tc.leases, Kind: "lock-"}.Decide(kids, tc.ours)
		require.NoError(t, err)
		tc.want.Refresh, tc.want.RefreshIsHead = "", false
		assert.Equal(t, tc.want, plain, "leases %d ours %d, no lookahead", tc.leases, tc.ours)
	}
	// A head of another kind (a writer of a read/write lock sharing the
	// parent) could downgrade: no fast handoff behind it.
	mixed := SortChildren([]string{"_c_" + uuidA + "-__WRIT__0000000001", "lock-0000000002"}, "lock-", "__WRIT__")
	d, err := LeaseDriver{Leases: 1, Kind: "lock-"}.Decide(mixed, 1)
	require.NoError(t, err)
	assert.Equal(t, Decision{Watch: "_c_" + uuidA + "-__WRIT__0000000001"}, d)
	// Nor, two behind it, a decision from the listing without it when it
	// goes: it might have added a node ahead of ours.
	mixed = SortChildren([]string{"_c_" + uuidA + "-__WRIT__0000000001", "lock-0000000002", "lock-0000000003"}, "lock-", "__WRIT__")
	d, err = LeaseDriver{Leases: 1, Kind: "lock-", Lookahead: true}.Decide(mixed, 2)
	require.NoError(t, err)
	assert.Equal(t, Decision{Watch: "lock-0000000002", Refresh: "_c_" + uuidA + "-__WRIT__0000000001"}, d)

	_, err = LeaseDriver{Leases: 1}.Decide(kids, -1)
	assert.Error(t, err, "our node missing")
	_, err = LeaseDriver{Leases: 1}.Decide(kids, 4)
	assert.Error(t, err)
	_, err = LeaseDriver{}.Decide(kids, 0)
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
}

// A protected path is Curator's: parent/_c_<uuid v4>-name, a fresh UUID
// each time.
func TestProtectedPath(t *testing.T) {
	re := regexp.MustCompile(`^/a/b/_c_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}-lock-$`)
	seen := map[string]bool{}
	for range 1000 {
		p := protectedPath("/a/b", "lock-")
		require.Regexp(t, re, p)
		require.False(t, seen[p], "a repeated UUID")
		seen[p] = true
		prefix, ok := protectedPrefixOf(session.BaseName(p))
		require.True(t, ok)
		require.Equal(t, strings.TrimSuffix(session.BaseName(p), "lock-"), prefix)
	}
	require.Regexp(t, `^/_c_[0-9a-f-]{36}-x$`, protectedPath("/", "x"))
}

// DeleteProtected deletes by a whole protected prefix only: anything
// shorter could match the nodes of others. It is refused before any
// request (the Conn is nil).
func TestDeleteProtectedRefusesOtherPrefixes(t *testing.T) {
	whole, ok := protectedPrefixOf(session.BaseName(protectedPath("/a", "lock-")))
	require.True(t, ok)
	for _, prefix := range []string{"", "_c_", whole[:len(whole)-1], whole + "lock-"} {
		err := DeleteProtected(context.Background(), nil, "/a", prefix, "", 0)
		assert.ErrorIs(t, err, recipes.ErrInvalidArgument, "%q", prefix)
	}
}
