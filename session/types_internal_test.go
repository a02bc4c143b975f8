package session

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOwnTypesMatchTheWire: session's create modes and permissions are
// ZooKeeper's values, which go-zookeeper sends as they are.
func TestOwnTypesMatchTheWire(t *testing.T) {
	for mode, flag := range map[CreateMode]int32{
		Persistent: zk.FlagPersistent, Ephemeral: zk.FlagEphemeral,
		PersistentSequential: zk.FlagSequence, EphemeralSequential: zk.FlagEphemeralSequential,
	} {
		got, err := mode.flags()
		require.NoError(t, err)
		assert.Equal(t, flag, got, "%v", mode)
	}
	for perm, want := range map[Perm]int32{
		PermRead: zk.PermRead, PermWrite: zk.PermWrite, PermCreate: zk.PermCreate,
		PermDelete: zk.PermDelete, PermAdmin: zk.PermAdmin, PermAll: zk.PermAll,
	} {
		assert.Equal(t, want, int32(perm), "%v", perm)
	}
	assert.Equal(t, "cdrwa", PermAll.String())
}

// TestCreateModeRefused: a mode that is none of the four (a container or
// TTL flag cast in) is bad input, named.
func TestCreateModeRefused(t *testing.T) {
	for _, m := range []CreateMode{-1, zk.FlagContainer, zk.FlagTTL, 99} {
		_, err := m.flags()
		require.ErrorIs(t, err, ErrInvalidArgument, "%v", m)
		assert.ErrorContains(t, err, "create mode")
	}
	assert.True(t, EphemeralSequential.IsEphemeral() && EphemeralSequential.IsSequential())
	assert.False(t, Persistent.IsEphemeral() || Persistent.IsSequential())
}

// TestWireACL: an ACL is refused when empty, without a scheme, or with
// permissions ZooKeeper does not have; otherwise it goes out as given.
func TestWireACL(t *testing.T) {
	for name, acl := range map[string][]ACL{
		"empty":     nil,
		"no scheme": {{Perms: PermAll, ID: "anyone"}},
		"bad perms": {{Perms: 0x40, Scheme: "world", ID: "anyone"}},
	} {
		_, err := wireACL(acl)
		assert.ErrorIs(t, err, ErrInvalidArgument, name)
	}
	wire, err := wireACL(DigestACL(PermRead|PermCreate, "alice", "pw"))
	require.NoError(t, err)
	assert.Equal(t, zk.DigestACL(zk.PermRead|zk.PermCreate, "alice", "pw"), wire)
}

// TestStatAndEventOf: go-zookeeper's Stat and watch events convert field
// by field; event paths lose the namespace, as every returned path does.
func TestStatAndEventOf(t *testing.T) {
	assert.Nil(t, statOf(nil))
	st := statOf(&zk.Stat{Czxid: 1, Mzxid: 2, Pzxid: 3, Ctime: 1700000000123, Mtime: 1700000000456,
		Version: 4, Cversion: 5, Aversion: 6, EphemeralOwner: 7, DataLength: 8, NumChildren: 9})
	assert.Equal(t, &Stat{Czxid: 1, Mzxid: 2, Pzxid: 3, Ctime: 1700000000123, Mtime: 1700000000456,
		Version: 4, Cversion: 5, Aversion: 6, EphemeralOwner: 7, DataLength: 8, NumChildren: 9}, st)
	assert.Equal(t, time.UnixMilli(1700000000123), st.Created())
	assert.Equal(t, time.UnixMilli(1700000000456), st.Modified())

	c := &Client{cfg: config{namespace: "/ns"}}
	assert.Equal(t, Event{Type: EventNodeDeleted, Path: "/a"},
		c.eventOf(zk.Event{Type: zk.EventNodeDeleted, State: zk.StateSyncConnected, Path: "/ns/a"}))
	gone := c.eventOf(zk.Event{Type: zk.EventNotWatching, Path: "/ns/a", Err: zk.ErrSessionExpired})
	assert.Equal(t, EventNotWatching, gone.Type)
	assert.True(t, errors.Is(gone.Err, ErrSessionExpired))

	zch := make(chan zk.Event, 1)
	zch <- zk.Event{Type: zk.EventNodeChildrenChanged, Path: "/ns"}
	close(zch)
	ev, ok := <-c.watchOf(context.Background(), zch)
	require.True(t, ok)
	assert.Equal(t, Event{Type: EventNodeChildrenChanged, Path: "/"}, ev)
	assert.Nil(t, c.watchOf(context.Background(), nil))

	// A watch given up on (its context ended) closes without an event, and
	// its goroutine ends (goleak checks it at the end of the package).
	ctx, cancel := context.WithCancel(context.Background())
	abandoned := c.watchOf(ctx, make(chan zk.Event, 1))
	cancel()
	_, ok = <-abandoned
	assert.False(t, ok, "closed without an event")
}

// BenchmarkWatchOf is what the conversion of one watch costs: the
// goroutine that carries go-zookeeper's event to the client's channel.
func BenchmarkWatchOf(b *testing.B) {
	c := &Client{cfg: config{namespace: "/ns"}}
	b.ReportAllocs()
	for b.Loop() {
		zch := make(chan zk.Event, 1)
		ch := c.watchOf(context.Background(), zch)
		zch <- zk.Event{Type: zk.EventNodeDeleted, Path: "/ns/a"}
		close(zch)
		<-ch
	}
}

// BenchmarkWatchRaw is the same without the conversion, for comparison.
func BenchmarkWatchRaw(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		zch := make(chan zk.Event, 1)
		zch <- zk.Event{Type: zk.EventNodeDeleted, Path: "/ns/a"}
		close(zch)
		<-zch
	}
}
