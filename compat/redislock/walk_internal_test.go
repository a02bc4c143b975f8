package redislock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
)

// A random walk over the scripts (acquisitions that queue or not, with a
// kept entry, none or '?', releases, give-ups, renewals and take-backs),
// the keys' expiry, a value restored in another run of the server and the
// server's quiet period keeps the waiter mark's invariant (scripts.go:
// the queue is not empty => the lock has no value, or a marked one) after
// every step, and no acquisition jumps a waiter whose client listens. The
// walk is seeded from the clock; a failure names its seed and step. It
// fails if any one writer of the lock's value leaves out its mark, or the
// fast path takes a marked value, or a marked release skips the queue.
func TestWaiterMarkWalk(t *testing.T) {
	addr := harness.StartRedis(t).Addr()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	l, err := New(newClient(t, addr), "walk", WithTTL(time.Second))
	require.NoError(t, err)
	admin := redis.NewClient(&redis.Options{Addr: addr})
	defer func() { _ = admin.Close() }()
	lk, qk, mk := l.keys[0], l.keys[2], l.keys[3]
	info, err := admin.Info(ctx, "server").Result()
	require.NoError(t, err)
	_, run, _ := strings.Cut(info, "run_id:")
	run, _, _ = strings.Cut(run, "\r\n")

	// The fast path wants the server's last save a second and a TTL old.
	for i := 0; ; i++ {
		last, err := admin.LastSave(ctx).Result()
		require.NoError(t, err)
		now, err := admin.Time(ctx).Result()
		require.NoError(t, err)
		if now.UnixMilli() >= (last+1)*1000+l.ttl.Milliseconds() {
			break
		}
		require.Less(t, i, 1000, "the server's LASTSAVE never aged")
		time.Sleep(10 * time.Millisecond)
	}

	ids := []string{"a", "b", "c", "d"} // d does not listen
	sub := admin.Subscribe(ctx, "ch-a", "ch-b", "ch-c")
	_, err = sub.Receive(ctx)
	require.NoError(t, err)
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for range sub.Channel() { // grants are not looked at
		}
	}()
	defer func() { _ = sub.Close(); <-drained }()
	listens := func(id string) bool { return id != "d" }
	entries := map[string]string{}
	tokens := map[string]int64{}

	// The paths the walk took: it would prove nothing without them.
	var freeGrants, handoffs, takeBacks int
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 1))
	const steps = 3000
	value := func() string { // "" when the key is missing
		v, err := admin.Get(ctx, lk).Result()
		if errors.Is(err, redis.Nil) {
			return ""
		}
		require.NoError(t, err)
		return v
	}
	for step := range steps {
		v := value()
		queue, err := admin.LRange(ctx, qk, 0, -1).Result()
		require.NoError(t, err)
		me := ids[rng.IntN(len(ids))]
		if id, _, _ := strings.Cut(v, " "); id != "-" && id != "" && rng.IntN(2) == 0 {
			me = id // the holder, half the time: it releases, renews
		}
		var did string
		switch op := rng.IntN(100); {
		case op < 40: // acquire
			queueIt := rng.IntN(4) != 0
			entry := ""
			switch rng.IntN(3) {
			case 1:
				entry = entries[me]
			case 2:
				entry = "?"
			}
			stamp := fmt.Sprint(time.Now().UnixMicro())
			q := "0"
			if queueIt {
				q = "1"
			}
			reply, err := acquireScript.Run(ctx, admin, l.keys, me, l.ttl.Milliseconds(), q, l.waitTTL().Milliseconds(),
				"PUBLISH", "ch-"+me, stamp, entry).Slice()
			require.NoError(t, err)
			did = fmt.Sprintf("acquire(%s, queue %v, entry %q) = %v", me, queueIt, entry, reply)
			if reply[0].(int64) == 1 {
				tokens[me] = reply[1].(int64)
				if strings.HasPrefix(v, "- ") && !strings.HasSuffix(v, " w") {
					freeGrants++
				}
				heldByMe := strings.HasPrefix(v, me+" ")
				if !heldByMe {
					for _, e := range queue {
						id, _, _ := strings.Cut(e, " ")
						if id == me {
							break // its own place comes first
						}
						require.False(t, listens(id), "seed %d step %d: %s jumped %s queued in %v (value %q)", seed, step, did, id, queue, v)
					}
				}
			} else if len(reply) == 3 && reply[2].(string) != "" {
				entries[me] = reply[2].(string)
			}
		case op < 58: // release
			n, err := releaseScript.Run(ctx, admin, l.keys, me).Int64()
			require.NoError(t, err)
			did = fmt.Sprintf("release(%s) = %d", me, n)
			if after := value(); n == 1 && after != "" && !strings.HasPrefix(after, "- ") {
				handoffs++
			}
		case op < 68: // give up
			entry := entries[me]
			if rng.IntN(2) == 0 {
				entry = "?"
			}
			n, err := cancelScript.Run(ctx, admin, l.keys, me, entry).Int64()
			require.NoError(t, err)
			did = fmt.Sprintf("cancel(%s, %q) = %d", me, entry, n)
		case op < 78: // renew, or take back
			n, err := renewScript.Run(ctx, admin, l.renewKeys, me, l.ttl.Milliseconds(), tokens[me]).Int64()
			require.NoError(t, err)
			did = fmt.Sprintf("renew(%s) = %d", me, n)
			if n == 1 && !strings.HasPrefix(v, me+" ") {
				takeBacks++
			}
		case op < 84: // the holder's key expires
			require.NoError(t, admin.Del(ctx, lk).Err())
			did = "the lock's key expired"
		case op < 88: // the queue expires
			require.NoError(t, admin.Del(ctx, qk).Err())
			did = "the queue expired"
		case op < 92: // the value as restored in another run of the server
			f := strings.Split(v, " ")
			if len(f) < 4 {
				continue
			}
			f[2], f[3] = "0ther", "1"
			require.NoError(t, admin.Set(ctx, lk, strings.Join(f, " "), redis.KeepTTL).Err())
			did = "restored in another run"
		case op < 96: // the server is quiet (a restart)
			now, err := admin.Time(ctx).Result()
			require.NoError(t, err)
			require.NoError(t, admin.Set(ctx, mk, fmt.Sprintf("%d %s", now.UnixMilli()+60000, run), 24*time.Hour).Err())
			did = "quiet"
		default: // the quiet period ends
			now, err := admin.Time(ctx).Result()
			require.NoError(t, err)
			require.NoError(t, admin.Set(ctx, mk, fmt.Sprintf("%d %s", now.UnixMilli()-1, run), 24*time.Hour).Err())
			did = "not quiet"
		}
		after := value()
		n, err := admin.LLen(ctx, qk).Result()
		require.NoError(t, err)
		require.True(t, n == 0 || after == "" || strings.HasSuffix(after, " w"),
			"seed %d step %d: %s: the queue %v with an unmarked value %q (before: %q, %v)", seed, step, did, n, after, v, queue)
	}
	t.Logf("seed %d: %d grants of a lock released unmarked, %d handoffs, %d take-backs", seed, freeGrants, handoffs, takeBacks)
	require.Positive(t, freeGrants, "no grant of a lock released unmarked")
	require.Positive(t, handoffs, "no release handed the lock on")
	require.Positive(t, takeBacks, "no renewal took a key back")
}
