package session_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/session"
)

// CreateWithZxid's zxid is the new node's czxid, read off the create's reply
// (no request more than the create): on every member of an ensemble, with
// other clients writing meanwhile, through a namespace, and with guards.
func TestCreateWithZxid(t *testing.T) {
	z := harness.StartZK(t, 3)
	ctx := ctxT(t)
	base := fmt.Sprintf("/zxid-%d", time.Now().UnixNano())
	var wg sync.WaitGroup
	for i, m := range z.Members() {
		for j, opts := range [][]session.Option{nil, {session.WithNamespace("/ns-zxid")}} {
			c := connect(t, []string{m.Addr()}, opts...)
			dir := fmt.Sprintf("%s/m%d-%d", base, i, j)
			wg.Go(func() {
				for k := range 40 {
					var guards []string
					if k%4 == 3 {
						guards = []string{dir} // exists since the first create
					}
					node, zxid, err := c.CreateWithZxid(ctx, fmt.Sprintf("%s/_c_%d-lock-", dir, k), nil,
						session.Ephemeral|session.PersistentSequential, guards...)
					if !assert.NoError(t, err) {
						return
					}
					_, st, err := c.Get(ctx, node)
					if assert.NoError(t, err) {
						assert.Equal(t, st.Czxid, zxid, "%s on %s", node, m)
					}
				}
				_, _, err := c.CreateWithZxid(ctx, dir+"/guarded", nil, 0, dir+"/missing")
				assert.ErrorIs(t, err, session.ErrGuardFailed)
				ok, _, err := c.Exists(ctx, dir+"/guarded")
				assert.NoError(t, err)
				assert.False(t, ok, "nothing created without the guard")
				assert.Zero(t, session.ZxidTapMisses(c), "every zxid came off a reply")
			})
		}
	}
	wg.Wait()

	// Creates of one path by many goroutines of one client cannot be told
	// apart on the wire: each still gets its own node's czxid.
	c := connect(t, z.Servers())
	var same sync.WaitGroup
	for range 8 {
		same.Go(func() {
			for range 10 {
				node, zxid, err := c.CreateWithZxid(ctx, base+"/same/item-", nil, session.Ephemeral|session.PersistentSequential)
				if !assert.NoError(t, err) {
					return
				}
				_, st, err := c.Get(ctx, node)
				if assert.NoError(t, err) {
					assert.Equal(t, st.Czxid, zxid, node)
				}
			}
		})
	}
	same.Wait()

	// A node right under the root: no parent is written any more.
	node, zxid, err := c.CreateWithZxid(ctx, base+"-root", []byte("x"), session.Ephemeral)
	require.NoError(t, err)
	_, st, err := c.Get(ctx, node)
	require.NoError(t, err)
	assert.Equal(t, st.Czxid, zxid)
}

// A create whose reply the tap cannot match (its path is longer than the
// tap reads ahead) costs one read of the Stat, and the zxid is still the
// node's czxid.
func TestCreateWithZxidPastTheLookahead(t *testing.T) {
	servers := zktest.Shared(t)
	ctx := ctxT(t)
	c := connect(t, servers)
	dir := fmt.Sprintf("/zxid-long-%d", time.Now().UnixNano())
	long := dir + "/" + strings.Repeat("n", 5000) + "-"
	node, zxid, err := c.CreateWithZxid(ctx, long, nil, session.Ephemeral|session.PersistentSequential)
	require.NoError(t, err)
	_, st, err := c.Get(ctx, node)
	require.NoError(t, err)
	assert.Equal(t, st.Czxid, zxid)
	assert.Equal(t, int64(1), session.ZxidTapMisses(c), "the Stat was read once")
}
