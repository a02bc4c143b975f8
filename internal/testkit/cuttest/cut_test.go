package cuttest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/holdertest"
	"github.com/zkrecipes/zkrecipes/internal/testkit/tracetest"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphore"
	"github.com/zkrecipes/zkrecipes/session"
)

func TestMain(m *testing.M) { zktest.Main(m) }

// recipe makes the Locker of one recipe at path on c.
type recipe struct {
	name string
	new  func(c *session.Client, path string) (recipes.Locker, error)
}

var allRecipes = []recipe{
	{"mutex", func(c *session.Client, path string) (recipes.Locker, error) { return mutex.New(c, path) }},
	{"leader", func(c *session.Client, path string) (recipes.Locker, error) { return leader.NewLatch(c, path, "p") }},
	{"rwlock", func(c *session.Client, path string) (recipes.Locker, error) {
		l, err := rwlock.New(c, path)
		if err != nil {
			return nil, err
		}
		return l.WriteLock(), nil
	}},
	{"semaphore", func(c *session.Client, path string) (recipes.Locker, error) {
		s, err := semaphore.New(c, path, 1)
		if err != nil {
			return nil, err
		}
		return s.Locker(1), nil
	}},
}

// race is one holder on a cut member and its successor on the majority.
type race struct {
	name    string
	path    string
	timeout time.Duration
	policy  session.ErrorPolicy
	rec     *tracetest.Recorder
	race    *holdertest.Race
}

// A holder whose only server is a follower or an observer cut off from
// the rest of the ensemble (3 voters, 1 observer, ZooKeeper's default
// tickTime 2000 and syncLimit 5: the member answers its clients for 10 s
// after the cut) is told before a client on the majority side is granted
// the lock, which the leader lets go one session timeout after it last
// heard of the holder's session. Every recipe, both error policies,
// session timeouts of 6 s and 15 s, one cut of a follower and of the
// observer for all of them at once.
func TestHolderOnACutMemberIsToldFirst(t *testing.T) {
	if testing.Short() {
		t.Skip("a 4-member ensemble and a 15 s session timeout")
	}
	z := harness.StartZKCuttable(t, 3, 1, harness.DefaultTiming)
	follower := z.Followers(t)[0]
	majority := slices.DeleteFunc(z.VoterServers(), func(addr string) bool { return addr == follower.Addr() })
	observer := z.Observers()[0]
	successors := zktest.Connect(t, majority)

	var races []race
	for _, cut := range []*harness.ZKMember{follower, observer} {
		what := "follower"
		if cut == observer {
			what = "observer"
		}
		for _, timeout := range []time.Duration{6 * time.Second, 15 * time.Second} {
			for _, policy := range []session.ErrorPolicy{session.SuspendedIsLost, session.OnlyLostIsLost} {
				rec := tracetest.New()
				holder := zktest.Connect(t, []string{cut.Addr()}, session.WithSessionTimeout(timeout),
					session.WithErrorPolicy(policy), session.WithTrace(rec.Trace()))
				require.Equal(t, timeout, holder.SessionTimeout(), "the server granted another timeout")
				for _, r := range allRecipes {
					name := fmt.Sprintf("%s on a cut %s, %v, policy %v", r.name, what, timeout, policy)
					path := fmt.Sprintf("/cut/%s/%s/%v/%d", r.name, what, timeout, policy)
					h, err := r.new(holder, path)
					require.NoError(t, err)
					s, err := r.new(successors, path)
					require.NoError(t, err)
					// One recorder per holder client: its recipes' ends are
					// told apart by the lock's path.
					races = append(races, race{name, path, timeout, policy, rec, holdertest.Queue(t, h, s)})
				}
			}
		}
	}

	z.CutMember(t, follower)
	z.CutMember(t, observer)
	for _, r := range races {
		t.Run(r.name, func(t *testing.T) {
			// The default policy drops a member that cannot prove within
			// 3/4 of the session timeout; the other trusts until the
			// timeout less the drift margin. A timer may run late, by as
			// much as the scheduling allowance in the drift margin.
			want := r.timeout/4 - recipes.DriftMargin(r.timeout)
			if r.policy == session.OnlyLostIsLost {
				want = recipes.DriftMargin(r.timeout) - 10*time.Millisecond
			}
			gap := r.race.Finish(t, want)
			e := endOf(t, r.rec, r.race.Lease(), r.path)
			require.True(t, e.HasMargin, "a lost ZooKeeper lease knows its server's deadline")
			t.Logf("reported margin %v, told %v before the successor's grant", e.Margin.Round(time.Millisecond), gap.Round(time.Millisecond))
			assert.Positive(t, e.Margin, "the reported margin")
			assert.LessOrEqual(t, e.Margin, gap, "the reported margin is never larger than the real one")
		})
	}

	z.RestoreMember(t, follower)
	z.RestoreMember(t, observer)
	z.WaitReady(t)
	ctx := zktest.Ctx(t)
	for _, r := range allRecipes {
		children, _, err := successors.Children(ctx, "/cut/"+r.name)
		require.NoError(t, err)
		for _, c := range children {
			left, err := recursiveCount(ctx, successors, "/cut/"+r.name+"/"+c)
			require.NoError(t, err)
			assert.Zero(t, left, "nothing left behind under /cut/%s/%s", r.name, c)
		}
	}
}

// endOf waits for the end the recorder saw of the lease on the lock at
// path.
func endOf(t *testing.T, rec *tracetest.Recorder, lease recipes.Lease, path string) locktrace.LeaseEndInfo {
	t.Helper()
	<-lease.Done()
	var found locktrace.LeaseEndInfo
	rec.Await(t, "the trace of the lease's end", func(r *tracetest.Recorder) bool {
		for _, e := range r.Ends() {
			if e.Lock.Name == path {
				found = e
				return true
			}
		}
		return false
	})
	return found
}

// recursiveCount counts the ephemeral nodes (lock, lease and latch nodes)
// under path; containers and persistent parents do not count.
func recursiveCount(ctx context.Context, c *session.Client, path string) (int, error) {
	_, stat, err := c.Get(ctx, path)
	if err != nil {
		return 0, err
	}
	n := 0
	if stat.EphemeralOwner != 0 {
		n++
	}
	children, _, err := c.Children(ctx, path)
	if err != nil {
		return 0, err
	}
	for _, ch := range children {
		k, err := recursiveCount(ctx, c, path+"/"+ch)
		if err != nil {
			return 0, err
		}
		n += k
	}
	return n, nil
}
