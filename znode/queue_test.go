package znode_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/zkrecipes/zkrecipes/znode"
)

const uuid = "0f8fad5b-d9cb-469f-a165-70867728950e"

// The lock names of every recipe that queues: Curator's mutex, read/write
// lock, latch and semaphore lease; kazoo's lock and read lock.
var lockNames = []string{"lock-", "__READ__", "__WRIT__", "latch-", "lease-", "__lock__", "__rlock__"}

func TestParseChild(t *testing.T) {
	for _, tc := range []struct {
		why, name string
		kind      string
		seq       int64
	}{
		{"Curator's mutex, protected", "_c_" + uuid + "-lock-0000000001", "lock-", 1},
		{"Curator's mutex, unprotected (older clients)", "lock-0000000042", "lock-", 42},
		{"Curator's reader", "_c_" + uuid + "-__READ__0000000012", "__READ__", 12},
		{"Curator's writer", "_c_" + uuid + "-__WRIT__0000000013", "__WRIT__", 13},
		{"Curator's latch", "_c_" + uuid + "-latch-0000000004", "latch-", 4},
		{"Curator's semaphore lease", "_c_" + uuid + "-lease-0000000005", "lease-", 5},
		{"kazoo's Lock", "a1b2c3d4e5f6__lock__0000000003", "__lock__", 3},
		{"kazoo's ReadLock", "a1b2c3d4e5f6__rlock__0000000004", "__rlock__", 4},
		{"the last lock name counts", "x-lock-lock-0000000005", "lock-", 5},
		{"a lock name inside another's prefix", "__READ__-lock-0000000006", "lock-", 6},
		{"past int32", "_c_" + uuid + "-lock-2147483648", "lock-", 2147483648},
		{"the largest sequence", "lock-9999999999", "lock-", 9999999999},
		{"no lock name: the trailing ten digits", "something0000000009", "", 9},
		{"no lock name, nothing before the digits", "0000000007", "", 7},
	} {
		got, ok := znode.ParseChild(tc.name, lockNames...)
		if assert.True(t, ok, "%s: %q", tc.why, tc.name) {
			assert.Equal(t, znode.Child{Name: tc.name, Kind: tc.kind, Seq: tc.seq}, got, tc.why)
		}
	}

	for _, tc := range []struct{ why, name string }{
		{"empty", ""},
		{"the exclusive lock's node", "lock"},
		{"a lock name and no sequence", "lock-"},
		{"a protected name and no sequence", "_c_" + uuid + "-lock-"},
		{"too few digits", "lock-12"},
		{"too many digits", "lock-00000000001"},
		{"not digits", "lock-00000000x1"},
		{"a sign", "lock--000000001"},
		{"a lock name then letters, though ten digits come before", "0000000001lock-abc"},
		{"no lock name and no trailing digits", "readme"},
		{"no lock name and fewer than ten characters", "000000001"},
		{"the semaphore's folders", "leases"},
	} {
		_, ok := znode.ParseChild(tc.name, lockNames...)
		assert.False(t, ok, "%s: %q is no queue entry", tc.why, tc.name)
	}
}

// The lock names asked for decide what Kind is: a name none of them is in
// falls back to its trailing digits, with no kind.
func TestParseChildLockNames(t *testing.T) {
	name := "_c_" + uuid + "-latch-0000000004"
	got, ok := znode.ParseChild(name, "lock-")
	assert.True(t, ok)
	assert.Equal(t, znode.Child{Name: name, Seq: 4}, got, "another recipe's node")

	got, ok = znode.ParseChild(name)
	assert.True(t, ok)
	assert.Equal(t, znode.Child{Name: name, Seq: 4}, got, "no lock names at all")

	got, ok = znode.ParseChild("lock-0000000002", "", "lock-")
	assert.True(t, ok)
	assert.Equal(t, znode.Child{Name: "lock-0000000002", Kind: "lock-", Seq: 2}, got, "an empty lock name is ignored")
}
