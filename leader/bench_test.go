package leader_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testkit/curator"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/lockbench"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/session"
)

// Benchmarks of leader election, side by side with Curator's LeaderLatch on
// one server in one run: how long a waiting successor takes to lead when
// the leader is SIGKILLed and when it resigns, and by how much a leader cut
// off from the server is told before its successor is elected. One
// iteration is one round of each implementation (run them with -benchtime
// Nx); the medians of the rounds are reported, and ns/op is suppressed (a
// round is mostly setup). docs/benchmarks.md has the command and the
// results.

// benchTimeout is the session timeout of every participant here, Go and
// Java: short, so that a round after a SIGKILL is quick.
const benchTimeout = 2 * time.Second

// benchSeq numbers the benchmarks' election paths.
var benchSeq atomic.Int64

func benchPath(kind string) string {
	return fmt.Sprintf("/bench-election/%s-%d-%d", kind, time.Now().UnixNano(), benchSeq.Add(1))
}

// requireCurator ends b (skipped, or failed under ZKR_REQUIRE_INTEGRATION)
// when Curator's jars or a JDK are missing.
func requireCurator(b *testing.B) {
	b.Helper()
	if err := curator.Available(); err != nil {
		harness.Unavailable(b, "%v; %s", err, curator.Hint)
	}
}

// alternate runs measure once per implementation per iteration, each
// iteration starting with the next implementation (lockbench.SideBySide's
// order), and returns each implementation's measurements. It suppresses
// ns/op.
func alternate(b *testing.B, impls int, measure func(impl int) time.Duration) [][]time.Duration {
	b.Helper()
	took := make([][]time.Duration, impls)
	for r := 0; b.Loop(); r++ {
		for k := range impls {
			i := (r + k) % impls
			took[i] = append(took[i], measure(i))
		}
	}
	b.ReportMetric(0, "ns/op")
	return took
}

// reportMedians reports each implementation's median in milliseconds
// (unit name-what-ms) and as a multiple of benchTimeout
// (name-x-session-timeout), and logs every round's.
func reportMedians(b *testing.B, names []string, what string, took [][]time.Duration) {
	b.Helper()
	for i, name := range names {
		rounds := make([]string, len(took[i]))
		for r, d := range took[i] {
			rounds[r] = d.Round(100 * time.Microsecond).String()
		}
		b.Logf("%s %s, by round: %s", name, what, strings.Join(rounds, " "))
		m := lockbench.Median(took[i])
		b.ReportMetric(float64(m)/float64(time.Millisecond), name+"-"+what+"-ms")
		b.ReportMetric(m.Seconds()/benchTimeout.Seconds(), name+"-x-session-timeout")
	}
}

// reportFailover reports reportMedians of Curator's (took[0]) and ours
// (took[1]), and the ratio of their medians, ours/curator.
func reportFailover(b *testing.B, took [][]time.Duration) {
	b.Helper()
	reportMedians(b, []string{"curator", "ours"}, "failover", took)
	b.ReportMetric(float64(lockbench.Median(took[1]))/float64(lockbench.Median(took[0])), "ours/curator")
}

// awaitLeading is latch-await bounded by waitLimit in the JVM too.
var awaitLeading = fmt.Sprint("latch-await ", waitLimit.Milliseconds())

// elected is a campaign's outcome and when Campaign returned.
type elected struct {
	l   *leader.Leadership
	at  time.Time
	err error
}

// campaign campaigns in a goroutine and sends the outcome.
func campaign(ctx context.Context, e *leader.Election) <-chan elected {
	won := make(chan elected, 1)
	go func() {
		l, err := e.Campaign(ctx)
		won <- elected{l, time.Now(), err}
	}()
	return won
}

// await waits (waitLimit) for the campaign's leadership.
func await(b *testing.B, won <-chan elected) elected {
	b.Helper()
	select {
	case w := <-won:
		if w.err != nil {
			b.Fatalf("Campaign: %v", w.err)
		}
		return w
	case <-time.After(waitLimit):
		b.Fatalf("no leader within %v", waitLimit)
		return elected{}
	}
}

// awaitQueue polls until the election at e's path has n participants.
func awaitQueue(b *testing.B, e *leader.Election, n int) {
	b.Helper()
	ctx := ctxT(b)
	deadline := time.Now().Add(waitLimit)
	for {
		ps, err := e.Participants(ctx)
		if err == nil && len(ps) == n {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d participants (%v) after %v, want %d", len(ps), err, waitLimit, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// crashMoment waits a random time, up to a third of the session timeout,
// before a kill, so that a crash comes at any moment of the leader's cycle
// of pings (every third of the session timeout for Curator's idle client;
// ours sends a keepalive every sixth). Without it our leader, a process
// started just before, would always die right after its last request, and
// the server would expire its session the longest possible time after the
// kill.
func crashMoment() { time.Sleep(rand.N(benchTimeout / 3)) }

// BenchmarkFailoverKilled: the leader is SIGKILLed while a successor of
// the same kind waits; the time from the kill to the successor leading
// (ours: its Campaign returns; Curator's: its latch-await replies). Both
// wait for the server to expire the dead leader's session: one session
// timeout after it last heard from the leader, rounded up to the server's
// tick.
func BenchmarkFailoverKilled(b *testing.B) {
	requireCurator(b)
	servers := sharedServers(b)

	// Ours: a new Go leader process each round (the holder process of
	// main_test.go), and one in-process successor that resigns after
	// leading.
	goPath := benchPath("killed-go")
	successor := newLatch(b, connect(b, servers, session.WithSessionTimeout(benchTimeout)), goPath, "successor")
	ours := func() time.Duration {
		old := zktest.StartHolder(b, servers, goPath, "leader", benchTimeout)
		won := campaign(ctxT(b), successor)
		awaitQueue(b, successor, 2)
		crashMoment()
		start := time.Now()
		old.Kill(b)
		w := await(b, won)
		if err := w.l.Release(ctxT(b)); err != nil {
			b.Fatal(err)
		}
		return w.at.Sub(start)
	}

	// Curator's: the successor of one round is the leader of the next;
	// a new agent queues behind it each round.
	javaPath := benchPath("killed-curator")
	observer := newLatch(b, connect(b, servers), javaPath, "observer") // never campaigns
	agents := 0
	newAgent := func() *curator.Agent {
		agents++
		a := curator.Start(b, servers, curator.WithSessionTimeout(benchTimeout), curator.WithName(fmt.Sprint("curator ", agents)))
		a.DoExpect(b, fmt.Sprintf("latch %s java-%d", javaPath, agents), "ok")
		return a
	}
	javaLeader := newAgent()
	javaLeader.DoExpect(b, awaitLeading, "leading")
	theirs := func() time.Duration {
		next := newAgent()
		awaitQueue(b, observer, 2)
		next.Send(b, awaitLeading)
		crashMoment()
		start := time.Now()
		javaLeader.Kill()
		next.Expect(b, "leading", waitLimit)
		took := time.Since(start)
		javaLeader = next
		return took
	}

	took := alternate(b, 2, func(impl int) time.Duration {
		if impl == 0 {
			return theirs()
		}
		return ours()
	})
	reportFailover(b, took)
}

// BenchmarkFailoverResigned: the leader resigns (ours: Leadership.Release;
// Curator's: latch-close) while a successor of the same kind waits; the
// time from the call to the successor leading. The two participants of
// each implementation swap roles every round.
func BenchmarkFailoverResigned(b *testing.B) {
	requireCurator(b)
	servers := sharedServers(b)

	goPath := benchPath("resigned-go")
	goParts := [2]*leader.Election{}
	for i := range goParts {
		goParts[i] = newLatch(b, connect(b, servers, session.WithSessionTimeout(benchTimeout)), goPath, fmt.Sprint("go-", i))
	}
	goLead := await(b, campaign(ctxT(b), goParts[0])).l
	goRound := 0
	ours := func() time.Duration {
		goRound++
		next := goParts[goRound%2]
		won := campaign(ctxT(b), next)
		awaitQueue(b, next, 2)
		start := time.Now()
		if err := goLead.Release(ctxT(b)); err != nil {
			b.Fatal(err)
		}
		w := await(b, won)
		goLead = w.l
		return w.at.Sub(start)
	}

	javaPath := benchPath("resigned-curator")
	observer := newLatch(b, connect(b, servers), javaPath, "observer") // never campaigns
	javaParts := [2]*curator.Agent{}
	for i := range javaParts {
		javaParts[i] = curator.Start(b, servers, curator.WithSessionTimeout(benchTimeout), curator.WithName(fmt.Sprint("curator ", i)))
	}
	javaParts[0].DoExpect(b, "latch "+javaPath+" java-0", "ok")
	javaParts[0].DoExpect(b, awaitLeading, "leading")
	javaRound := 0
	theirs := func() time.Duration {
		javaRound++
		lead, next := javaParts[(javaRound+1)%2], javaParts[javaRound%2]
		next.DoExpect(b, fmt.Sprintf("latch %s java-%d", javaPath, javaRound%2), "ok")
		awaitQueue(b, observer, 2)
		next.Send(b, awaitLeading)
		start := time.Now()
		lead.Send(b, "latch-close")
		next.Expect(b, "leading", waitLimit)
		took := time.Since(start)
		lead.Expect(b, "closed", waitLimit)
		return took
	}

	// A few rounds of each first, not counted: the agents' first rounds
	// load LeaderLatch's classes (tens of milliseconds).
	for range 3 {
		theirs()
		ours()
	}
	took := alternate(b, 2, func(impl int) time.Duration {
		if impl == 0 {
			return theirs()
		}
		return ours()
	})
	reportFailover(b, took)
	if err := goLead.Release(ctxT(b)); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkMarginBlackholed: the leader's connection is blackholed (the
// proxy holds both directions) while a successor waits; the margin is the
// time the successor was elected minus the time the old leader's
// Leadership context was cancelled (positive: the old leader was told
// first), under each error policy, alternating round by round. Only ours
// is measured: Curator's LeaderLatch drops leadership at SUSPENDED under
// its standard error policy, but the agent has no command that reports
// when.
func BenchmarkMarginBlackholed(b *testing.B) {
	servers := sharedServers(b)
	policies := []session.ErrorPolicy{session.SuspendedIsLost, session.OnlyLostIsLost}
	names := []string{"suspended-is-lost", "only-lost-is-lost"}
	successor := newLatch(b, connect(b, servers, session.WithSessionTimeout(benchTimeout)), benchPath("margin"), "successor")
	margin := func(policy session.ErrorPolicy) time.Duration {
		// A fresh proxy and client each round: the blackholed session
		// expires.
		p := harness.NewProxy(b, servers[0])
		old := newLatch(b, connect(b, []string{p.Addr()}, session.WithSessionTimeout(benchTimeout),
			session.WithErrorPolicy(policy)), successor.Path(), "old")
		l, err := old.Campaign(ctxT(b))
		if err != nil {
			b.Fatal(err)
		}
		told := make(chan time.Time, 1)
		context.AfterFunc(l.Context(), func() { told <- time.Now() })
		won := campaign(ctxT(b), successor)
		awaitQueue(b, successor, 2)
		p.Blackhole(b)
		w := await(b, won)
		var at time.Time
		select {
		case at = <-told:
		case <-time.After(waitLimit):
			b.Fatalf("the old leader was not told within %v", waitLimit)
		}
		p.Restore(b)
		if err := w.l.Release(ctxT(b)); err != nil {
			b.Fatal(err)
		}
		return w.at.Sub(at)
	}
	took := alternate(b, len(policies), func(i int) time.Duration { return margin(policies[i]) })
	reportMedians(b, names, "margin", took)
}
