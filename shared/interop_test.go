package shared_test

import (
	"encoding/hex"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/curator"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/shared"
)

// Curator's SharedCount and Go's Count on one node: each reads the other's
// sets, Go's Changes delivers Java's, Java's listener sees Go's, and a
// versioned write against a version the other moved is refused.
func TestInteropCuratorSharedCount(t *testing.T) {
	servers := sharedServers(t)
	a := curator.Start(t, servers, curator.WithName("curator count"))
	c := zktest.Connect(t, servers)
	ctx := ctxT(t)
	path := pathOf(t, "count")
	a.DoExpect(t, "count "+path+" 3", "ok") // creates it with 3
	count, err := shared.NewCount(c, path, 99)
	require.NoError(t, err)
	changes, err := count.Changes(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3, next(t, changes).Value, "Java's seed")

	a.DoExpect(t, "count-set -8", "ok")
	ch := next(t, changes)
	assert.Equal(t, -8, ch.Value)
	n, version, err := count.Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, -8, n)
	assert.Equal(t, ch.Version, version)

	require.NoError(t, count.Set(ctx, 1<<20))
	assert.Equal(t, 1<<20, next(t, changes).Value)
	awaitReply(t, a, "count-get", fmt.Sprintf("count %d", 1<<20))

	a.DoExpect(t, "count-set 4", "ok")
	ok, err := count.TrySet(ctx, 5, version) // the version before Go's and Java's sets
	require.NoError(t, err)
	assert.False(t, ok)
	_, version, err = count.Get(ctx)
	require.NoError(t, err)
	ok, err = count.TrySet(ctx, 5, version)
	require.NoError(t, err)
	assert.True(t, ok)
	awaitReply(t, a, "count-get", "count 5")
}

// Curator's SharedValue and Go's Value on one node: the same.
func TestInteropCuratorSharedValue(t *testing.T) {
	servers := sharedServers(t)
	a := curator.Start(t, servers, curator.WithName("curator value"))
	c := zktest.Connect(t, servers)
	ctx := ctxT(t)
	path := pathOf(t, "value")
	v, err := shared.NewValue(c, path, []byte("go seed"))
	require.NoError(t, err)
	got, err := v.Get(ctx) // Go creates it
	require.NoError(t, err)
	assert.Equal(t, "go seed", string(got.Value))
	a.DoExpect(t, "sharedvalue "+path+" "+hex.EncodeToString([]byte("java seed")), "ok")
	a.DoExpect(t, "sharedvalue-get", "value "+hex.EncodeToString([]byte("go seed"))+" 0")

	changes, err := v.Changes(ctx)
	require.NoError(t, err)
	assert.Equal(t, "go seed", string(next(t, changes).Value))
	a.DoExpect(t, "sharedvalue-set "+hex.EncodeToString([]byte("from java")), "ok")
	ch := next(t, changes)
	assert.Equal(t, "from java", string(ch.Value))
	assert.Equal(t, int32(1), ch.Version)

	require.NoError(t, v.Set(ctx, []byte("from go")))
	assert.Equal(t, "from go", string(next(t, changes).Value))
	awaitReply(t, a, "sharedvalue-get", "value "+hex.EncodeToString([]byte("from go"))+" 2")
	awaitSeen(t, a, hex.EncodeToString([]byte("from go"))) // Java's listener was told
	a.DoExpect(t, "sharedvalue-tryset "+hex.EncodeToString([]byte("java again")), "true")
	ok, err := v.TrySet(ctx, []byte("stale"), 2) // Java wrote version 3 since
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Equal(t, "java again", string(next(t, changes).Value))
}

// awaitReply sends cmd until the reply is want, within waitLimit.
func awaitReply(t *testing.T, a *curator.Agent, cmd, want string) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		got := a.Do(t, cmd)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: reply to %q is still %q, want %q", a.Name(), cmd, got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// awaitSeen reads the values the agent's SharedValue listener was told
// until want is among them, within waitLimit: Curator updates the value
// before it tells its listeners, so sharedvalue-get may show it first.
func awaitSeen(t *testing.T, a *curator.Agent, want string) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	var seen []string
	for {
		seen = append(seen, a.List(t, "sharedvalue-seen", "seen")...)
		if slices.Contains(seen, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: its listener was told %q, not %q", a.Name(), seen, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
