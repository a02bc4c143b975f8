package redislock_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/redislock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// commandCounts reads INFO commandstats: calls by command name.
func commandCounts(t *testing.T, admin *redis.Client) map[string]int64 {
	t.Helper()
	s, err := admin.Info(ctxT(t), "commandstats").Result()
	require.NoError(t, err)
	calls := map[string]int64{}
	for _, line := range strings.Split(s, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if !ok {
			continue
		}
		n, _, _ := strings.Cut(rest, ",")
		v, err := strconv.ParseInt(n, 10, 64)
		require.NoError(t, err, "INFO commandstats line %q", line)
		calls[strings.TrimPrefix(name, "cmdstat_")] = v
	}
	return calls
}

// executed is what the server ran while do did, less the INFO that read
// the counts before it.
func executed(t *testing.T, admin *redis.Client, do func()) map[string]int64 {
	t.Helper()
	before := commandCounts(t, admin)
	do()
	after := commandCounts(t, admin)
	diff := map[string]int64{}
	for name, n := range after {
		if d := n - before[name]; d > 0 {
			diff[name] = d
		}
	}
	if diff["info"]--; diff["info"] == 0 {
		delete(diff, "info")
	}
	return diff
}

// witnessable waits (a bounded loop, on the server's clock) until the
// server's clock is a second and a TTL (testTTL) past its LASTSAVE: only
// then does a grant write a witness that a later acquisition checks, and
// the fast path takes a released lock (redisguard: the same run, told
// without INFO; fastAcquire: a server that saved or started less than a
// TTL ago leaves it to the full path).
func witnessable(t *testing.T, admin *redis.Client) {
	t.Helper()
	ctx := ctxT(t)
	for ctx.Err() == nil {
		last, err := admin.LastSave(ctx).Result()
		require.NoError(t, err)
		now, err := admin.Time(ctx).Result()
		require.NoError(t, err)
		if !now.Before(time.Unix(last+1, 0).Add(testTTL)) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("the server's clock never passed LASTSAVE by a second and a TTL")
}

// A lock released in this run of the server is taken and released with
// eight commands (two scripts, six commands in them) and no INFO; a save sends the next acquisition to the
// full path (INFO, the quiet marker, the counter), which writes the new
// witness, and the one after is fast again.
func TestUncontendedFastPath(t *testing.T) {
	r := harness.StartRedis(t)
	admin := rdb(t, r.Addr())
	ctx := ctxT(t)
	l := newLock(t, client(t, r.Addr()), "fast")
	once := func() {
		lease, err := l.Acquire(ctx)
		require.NoError(t, err)
		require.NoError(t, lease.Release(ctx))
	}
	witnessable(t, admin)
	once() // the full path: a new lock
	fast := map[string]int64{"evalsha": 2, "get": 2, "lastsave": 1, "time": 1, "set": 2}
	require.Equal(t, fast, executed(t, admin, once), "a lock released in this run")

	require.NoError(t, admin.Save(ctx).Err())
	witnessable(t, admin)
	full := executed(t, admin, once)
	require.Contains(t, full, "info", "after a save, the full path: %v", full)
	require.Equal(t, fast, executed(t, admin, once), "fast again once the full path wrote the new witness")
}

// A released value restored by a restart (from a snapshot) carries a
// witness of the earlier run, which the restarted server's LASTSAVE never
// equals: it is not taken as released in this run, and the server stays
// quiet for the TTL while the lock's holder, granted after the snapshot,
// still trusts its lease. (TestRedisRestartFromASnapshot is the same with
// whatever witness the young server gives; here it is one, so that a
// check that only asked for a witness, not for LASTSAVE's, fails.)
func TestRestoredWitnessIsNotThisRun(t *testing.T) {
	r := harness.StartRedis(t)
	admin := rdb(t, r.Addr())
	ctx := ctxT(t)
	witnessable(t, admin)
	l := newLock(t, client(t, r.Addr()), "restored")
	first, err := l.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, first.Release(ctx))
	v, err := admin.Get(ctx, "{restored}").Result()
	require.NoError(t, err)
	require.Regexp(t, `^- \d+ \w+ [1-9]\d*$`, v, "released with a witness")
	require.NoError(t, admin.Save(ctx).Err())
	holder, err := l.Acquire(ctx)
	require.NoError(t, err)
	contender := newLock(t, client(t, r.Addr()), "restored")
	r.Stop(t)
	r.Start(t)
	got, err := admin.Get(ctx, "{restored}").Result()
	require.NoError(t, err)
	require.Equal(t, v, got, "the snapshot brought the released value back")
	_, err = contender.TryAcquire(ctx)
	require.ErrorIs(t, err, recipes.ErrLocked, "a released value of an earlier run was taken at once while its holder trusted its lease")
	require.ErrorIs(t, err, redislock.ErrQuiet)
	for range 100 { // a renewal takes the key back, within a third of the TTL
		if v, err := admin.Get(ctx, "{restored}").Result(); err == nil && !strings.HasPrefix(v, "- ") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(t, holder.Err(), "the holder's renewals take its key back")
	require.NoError(t, holder.Release(ctx))
}

// A released value replicated from another master carries that master's
// witness, which may equal this server's LASTSAVE: two servers started,
// or one started and the other saved (a full sync on disk), in the same
// second. On a replica promoted less than a TTL after it started, the
// full path is quiet (the run id is another run's, and the server is
// younger than a TTL: it may have missed a holder granted on the old
// master); the fast path must be no weaker. The value here is the one
// such a master would have left on this young server.
func TestWitnessOfAnotherServerOnAYoungServer(t *testing.T) {
	r := harness.StartRedis(t)
	admin := rdb(t, r.Addr())
	ctx := ctxT(t)
	last, err := admin.LastSave(ctx).Result()
	require.NoError(t, err)
	other := strings.Repeat("0", 40) // another server's run id
	require.NoError(t, admin.Set(ctx, "{young}", fmt.Sprintf("- 5 %s %d", other, last), 24*time.Hour).Err())
	// A TTL the young server is surely within: it started moments ago.
	l := newLock(t, client(t, r.Addr()), "young", redislock.WithTTL(10*time.Minute))
	lease, err := l.TryAcquire(ctx)
	if err == nil {
		require.NoError(t, lease.Release(ctx))
	}
	require.ErrorIs(t, err, redislock.ErrQuiet, "a server younger than a TTL granted a lock released on another server")
}
