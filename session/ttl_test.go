package session_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// ttlRoot is a fresh path for one test of this file.
func ttlRoot(t *testing.T) string {
	return fmt.Sprintf("/session-ttl-%d/%s", time.Now().UnixNano(), strings.ReplaceAll(t.Name(), "/", "_"))
}

// awaitGone waits until path is gone, bounded by waitLimit.
func awaitGone(t *testing.T, c *session.Client, path string) {
	t.Helper()
	require.Eventually(t, func() bool {
		ok, _, err := c.Exists(ctxT(t), path)
		require.NoError(t, err)
		return !ok
	}, waitLimit, 20*time.Millisecond, "%s never went", path)
}

// A container node is made, and the server removes it once its last
// child is gone (the harness's servers check every second).
func TestCreateContainer(t *testing.T) {
	c := connect(t, zktest.Shared(t))
	path := ttlRoot(t) + "/container"
	made, err := c.Create(ctxT(t), path, []byte("c"), session.Container)
	require.NoError(t, err)
	require.Equal(t, path, made)
	_, err = c.Create(ctxT(t), path+"/child", nil, session.Persistent)
	require.NoError(t, err)
	require.NoError(t, c.Delete(ctxT(t), path+"/child", -1))
	awaitGone(t, c, path)
}

// The modes each request takes: a TTL mode only by CreateTTL, with a TTL
// from 1 ms to MaxTTL; no new mode by the plain-mode requests. Each
// refusal is an ErrInvalidArgument error naming what was wrong, sent to
// no server.
func TestCreateModesRefused(t *testing.T) {
	c := connect(t, zktest.Shared(t))
	path := ttlRoot(t) + "/node"
	for name, tc := range map[string]struct {
		do   func() error
		want string
	}{
		"Create PersistentWithTTL": {func() error {
			_, err := c.Create(ctxT(t), path, nil, session.PersistentWithTTL)
			return err
		}, "use CreateTTL"},
		"Create PersistentSequentialWithTTL": {func() error {
			_, err := c.Create(ctxT(t), path, nil, session.PersistentSequentialWithTTL)
			return err
		}, "use CreateTTL"},
		"CreateTTL Persistent": {func() error {
			_, err := c.CreateTTL(ctxT(t), path, nil, session.Persistent, time.Second)
			return err
		}, "takes no TTL"},
		"CreateTTL Container": {func() error {
			_, err := c.CreateTTL(ctxT(t), path, nil, session.Container, time.Second)
			return err
		}, "takes no TTL"},
		"CreateTTL Ephemeral": {func() error {
			_, err := c.CreateTTL(ctxT(t), path, nil, session.Ephemeral, time.Second)
			return err
		}, "takes no TTL"},
		"CreateTTL zero TTL": {func() error {
			_, err := c.CreateTTL(ctxT(t), path, nil, session.PersistentWithTTL, 0)
			return err
		}, "TTL 0s"},
		"CreateTTL negative TTL": {func() error {
			_, err := c.CreateTTL(ctxT(t), path, nil, session.PersistentWithTTL, -time.Second)
			return err
		}, "TTL -1s"},
		"CreateTTL TTL below 1ms": {func() error {
			_, err := c.CreateTTL(ctxT(t), path, nil, session.PersistentWithTTL, time.Microsecond)
			return err
		}, "TTL 1µs"},
		"CreateTTL TTL above MaxTTL": {func() error {
			_, err := c.CreateTTL(ctxT(t), path, nil, session.PersistentSequentialWithTTL, session.MaxTTL+time.Millisecond)
			return err
		}, "want 1ms to"},
		"CreateWithZxid Container": {func() error {
			_, _, err := c.CreateWithZxid(ctxT(t), path, nil, session.Container)
			return err
		}, "create mode 4"},
		"CreateAndList PersistentWithTTL": {func() error {
			_, _, _, err := c.CreateAndList(ctxT(t), path, nil, session.PersistentWithTTL, session.ParentPath(path))
			return err
		}, "create mode 5"},
		"Multi Container": {func() error {
			_, err := c.Multi(ctxT(t), session.CreateOp(path, nil, session.Container))
			return err
		}, "create mode 4"},
	} {
		t.Run(name, func(t *testing.T) {
			err := tc.do()
			require.ErrorIs(t, err, session.ErrInvalidArgument)
			assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	ok, _, err := c.Exists(ctxT(t), session.ParentPath(path))
	require.NoError(t, err)
	assert.False(t, ok, "nothing was made, not even a parent")
}

// A server without extended types (ZooKeeper's default) refuses a TTL node
// with ErrTTLDisabled, naming the setting.
func TestCreateTTLDisabled(t *testing.T) {
	c := connect(t, zktest.Shared(t))
	for _, mode := range []session.CreateMode{session.PersistentWithTTL, session.PersistentSequentialWithTTL} {
		_, err := c.CreateTTL(ctxT(t), ttlRoot(t)+"/ttl", nil, mode, time.Second)
		require.ErrorIs(t, err, session.ErrTTLDisabled, "%v", mode)
		assert.Contains(t, err.Error(), "zookeeper.extendedTypesEnabled=true")
	}
}

// On a server with extended types a TTL node is made (a sequential one
// with its sequence number), and the server removes it once its TTL has
// passed without a write or a child.
func TestCreateTTL(t *testing.T) {
	z := harness.StartZKExtended(t)
	c := connect(t, z.Servers())
	root := ttlRoot(t)
	made, err := c.CreateTTL(ctxT(t), root+"/ttl", []byte("t"), session.PersistentWithTTL, 200*time.Millisecond)
	require.NoError(t, err)
	require.Equal(t, root+"/ttl", made)
	seq, err := c.CreateTTL(ctxT(t), root+"/seq-", nil, session.PersistentSequentialWithTTL, 200*time.Millisecond)
	require.NoError(t, err)
	require.Regexp(t, `^`+root+`/seq-\d{10}$`, seq)
	data, st, err := c.Get(ctxT(t), made)
	require.NoError(t, err)
	assert.Equal(t, "t", string(data))
	assert.Zero(t, st.EphemeralOwner, "a TTL node belongs to no session")
	awaitGone(t, c, made)
	awaitGone(t, c, seq)
}
