package mutex_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/holdertest"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/znode"
)

// Why here and not in session/: these test the session's trust window,
// but what they assert is the order of a lock's grants, and session's
// tests take no lock (the package sits below every lock).

// The promise under one-way faults: a holder's lease is cancelled before
// anyone else can be granted its lock, by a margin. The server expires a
// session one session timeout t after it last heard from the client, and
// the notifications it keeps sending prove nothing about that, so the
// client trusts only the send time of its latest answered request: the
// holder is told at most 2/3 t after it (default policy), so at least t/3
// before the server may expire the session, or at t less the drift margin
// (OnlyLostIsLost). Each scenario drops the holder's client-to-server
// traffic while the server's traffic flows (or cuts both right after a
// notification), and measures how long before the next holder's grant the
// holder was told.

// trustRun numbers the scenarios' lock paths, unique across -count runs.
var trustRun atomic.Int64

// trustTimeout is the session timeout of the holders in these tests.
const trustTimeout = 3 * time.Second

// wantMargin is the least margin the test accepts between the holder's
// cancellation and the next grant: t/3 less the drift margin under the
// default policy; under OnlyLostIsLost the drift margin less its allowance
// for the client's own scheduling (so t/100).
func wantMargin(policy session.ErrorPolicy) time.Duration {
	if policy == session.OnlyLostIsLost {
		return recipes.DriftMargin(trustTimeout) - 10*time.Millisecond
	}
	return trustTimeout/3 - recipes.DriftMargin(trustTimeout)
}

// granted is the result of a successor's Acquire and when it returned.
type granted struct {
	lease recipes.Lease
	at    time.Time
}

// successor starts an Acquire of path on a healthy client of its own and
// waits until it is queued (n nodes under path).
func successor(t *testing.T, server, path string, n int) <-chan granted {
	t.Helper()
	c := connect(t, []string{server})
	got := make(chan granted, 1)
	go func() {
		l, err := newMutex(t, c, path).Acquire(ctxT(t))
		if assert.NoError(t, err) {
			got <- granted{l, time.Now()}
		}
		close(got)
	}()
	waitForNodes(t, c, path, n)
	return got
}

// checkToldFirst waits for the successor's grant and checks that the
// holder's lease had ended, by at least the policy's margin.
func checkToldFirst(t *testing.T, policy session.ErrorPolicy, holder *holdertest.Moment, next <-chan granted) {
	t.Helper()
	var g granted
	select {
	case r, ok := <-next:
		require.True(t, ok, "the successor's Acquire failed")
		g = r
	case <-time.After(waitLimit):
		t.Fatal("the successor never acquired")
	}
	t.Cleanup(func() { _ = g.lease.Release(context.Background()) })
	told := holder.Get()
	require.False(t, told.IsZero(), "the successor was granted the lock while the holder's lease was live")
	margin := g.at.Sub(told)
	t.Logf("holder told %v before the successor's grant (want at least %v)", margin.Round(time.Millisecond), wantMargin(policy))
	assert.GreaterOrEqual(t, margin, wantMargin(policy), "the holder was told too late")
}

// waitWatched waits (bounded) until the server reports that session sid
// watches path (the four-letter word wchp): a waiter is then waiting on its
// predecessor, and needs no more requests to hear of its deletion.
func waitWatched(t *testing.T, server, path string, sid int64) {
	t.Helper()
	want := fmt.Sprintf("0x%x", sid)
	require.Eventually(t, func() bool {
		out, err := harness.FourLetterWord(server, "wchp")
		if err != nil {
			return false
		}
		_, rest, ok := strings.Cut(out, path+"\n")
		if !ok {
			return false
		}
		for _, line := range strings.Split(rest, "\n") {
			if !strings.HasPrefix(line, "\t") {
				return false // the next path
			}
			if strings.TrimSpace(line) == want {
				return true
			}
		}
		return false
	}, waitLimit, 10*time.Millisecond, "session %s never watched %s", want, path)
}

// eachPolicy runs f once per error policy, each with a proxy to the shared
// server and a holder client of that policy behind it.
func eachPolicy(t *testing.T, f func(t *testing.T, server string, p *harness.Proxy, c *session.Client,
	policy session.ErrorPolicy, path string)) {
	server := sharedServers(t)[0]
	for _, policy := range []session.ErrorPolicy{session.SuspendedIsLost, session.OnlyLostIsLost} {
		t.Run(fmt.Sprint("policy ", policy), func(t *testing.T) {
			p := harness.NewProxy(t, server)
			c := connect(t, []string{p.Addr()}, session.WithSessionTimeout(trustTimeout), session.WithErrorPolicy(policy))
			require.Equal(t, trustTimeout, c.SessionTimeout(), "the server granted another timeout")
			f(t, server, p, c, policy, fmt.Sprintf("/trust/%s-%d", t.Name(), trustRun.Add(1)))
		})
	}
}

// The holder watches 20 nodes that keep changing; its requests are dropped
// while the notifications reach it.
func TestHolderToldFirstWhileNotificationsFlow(t *testing.T) {
	eachPolicy(t, func(t *testing.T, server string, p *harness.Proxy, c *session.Client,
		policy session.ErrorPolicy, path string) {
		ctx := ctxT(t)
		changer := connect(t, []string{server})
		const watched = 20
		nodes := make([]string, watched)
		for i := range nodes {
			nodes[i] = fmt.Sprintf("%s-watched/%02d", path, i)
			_, err := changer.Create(ctx, nodes[i], nil, 0)
			require.NoError(t, err)
			_, _, _, err = c.GetW(ctx, nodes[i])
			require.NoError(t, err)
		}
		lease, err := newMutex(t, c, path).Acquire(ctx)
		require.NoError(t, err)
		told := holdertest.ToldAt(lease)
		next := successor(t, server, path, 2)

		p.HoldToServer(t)
		stop := make(chan struct{})
		changed := make(chan struct{})
		go func() { // one node every t/20: a notification arrives all along
			defer close(changed)
			tick := time.NewTicker(trustTimeout / watched)
			defer tick.Stop()
			for i := 0; i < 4*watched; i++ {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				_, _ = changer.Set(context.Background(), nodes[i%watched], []byte{byte(i)}, -1)
			}
		}()
		checkToldFirst(t, policy, told, next)
		close(stop)
		<-changed
		p.Restore(t)
	})
}

// No watches of the application's: the holder-to-be is cut off from the
// server, then, 0.4 t later, granted the lock by its predecessor's deletion
// notification (the fast handoff sends no request). A client that trusted
// the last byte read would count that notification as a sign of life.
func TestGrantByNotificationIsBounded(t *testing.T) {
	eachPolicy(t, func(t *testing.T, server string, p *harness.Proxy, c *session.Client,
		policy session.ErrorPolicy, path string) {
		ctx := ctxT(t)
		first, err := newMutex(t, connect(t, []string{server}), path).Acquire(ctx)
		require.NoError(t, err)
		waiter := make(chan recipes.Lease, 1)
		go func() {
			l, err := newMutex(t, c, path).Acquire(ctx)
			if assert.NoError(t, err) {
				waiter <- l
			}
			close(waiter)
		}()
		next := successor(t, server, path, 3)
		sess, err := c.Session(ctx)
		require.NoError(t, err)
		waitWatched(t, server, first.(znode.Lease).Node(), sess.ID())

		p.HoldToServer(t)
		// Still trusted: the last reply came at most t/6 (the keepalive's
		// period) before the cut, and the default policy trusts 2/3 t.
		time.Sleep(trustTimeout * 4 / 10)
		require.NoError(t, first.Release(ctx))
		var lease recipes.Lease
		select {
		case l, ok := <-waiter:
			require.True(t, ok, "the waiter's Acquire failed")
			lease = l
		case <-time.After(waitLimit):
			t.Fatal("the waiter was not granted the lock")
		}
		told := holdertest.ToldAt(lease)
		checkToldFirst(t, policy, told, next)
		p.Restore(t)
	})
}

// The server stops hearing the holder (its pings are dropped) while its
// notifications flow; half a session timeout later a notification is read
// and both directions are cut at once: the last byte read is long after
// anything the server heard.
func TestHolderToldFirstAfterACutFollowingANotification(t *testing.T) {
	eachPolicy(t, func(t *testing.T, server string, p *harness.Proxy, c *session.Client,
		policy session.ErrorPolicy, path string) {
		ctx := ctxT(t)
		changer := connect(t, []string{server})
		watched := path + "-watched"
		_, err := changer.Create(ctx, watched, nil, 0)
		require.NoError(t, err)
		lease, err := newMutex(t, c, path).Acquire(ctx)
		require.NoError(t, err)
		told := holdertest.ToldAt(lease)
		next := successor(t, server, path, 2)
		_, _, ev, err := c.GetW(ctx, watched)
		require.NoError(t, err)

		p.HoldToServer(t)
		time.Sleep(trustTimeout / 2)
		_, err = changer.Set(ctx, watched, []byte("x"), -1)
		require.NoError(t, err)
		select {
		case <-ev:
		case <-time.After(waitLimit):
			t.Fatal("no notification")
		}
		p.Blackhole(t)
		checkToldFirst(t, policy, told, next)
		p.Restore(t)
	})
}
