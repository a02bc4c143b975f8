package sqlbench

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/lockbench"
)

// Takeover: a holder whose connection goes through a harness.Proxy, and a
// successor, connected directly, waiting for the lock. The proxy is then
// blackholed (both directions dropped; no connection is closed, as in a
// partition or a host that froze), and the takeover is the time from the
// blackhole to the successor holding, capped at takeoverCap.
//
// None of the peers has a way to see a silent holder go:
//
//   - The advisory locks (pg_advisory_lock, golang-migrate's) and GET_LOCK
//     belong to the holder's server session, which lives as long as its
//     connection. In a real partition the server would learn of it from
//     TCP keepalive, after net.ipv4.tcp_keepalive_time (7200 s by default,
//     PostgreSQL's tcp_keepalives_idle = 0 uses it) plus the probes, or
//     MariaDB from wait_timeout (28800 s) of idleness. Through the proxy it
//     does not even learn that: the server's socket is the proxy's, whose
//     kernel answers the keepalives.
//   - The seed table's row has no expiry: it stays until someone deletes
//     it by hand.
//
// So they are given takeoverCap, and reported "not within" it.

// takeoverCap is how long a round waits for the successor.
const takeoverCap = 10 * time.Second

// takeoverSettle is how long the successor is given to start waiting
// before the blackhole.
const takeoverSettle = 200 * time.Millisecond

// BenchmarkSQLTakeover: for each implementation on PostgreSQL and on
// MariaDB, per iteration one round in a rotating order (fresh clients, a
// fresh lock name): the holder's proxy is blackholed, and the time until
// the successor holds the lock is measured, up to takeoverCap. Then the
// proxy is restored, the holder releases, and the successor, if it was
// still waiting, takes the lock and releases it (a hand-off, not a
// takeover). The table gives, per implementation, the rounds, how many
// took over within takeoverCap, and the median and largest takeover of
// those.
func BenchmarkSQLTakeover(b *testing.B) {
	for _, kind := range kinds {
		b.Run(kind, func(b *testing.B) {
			s := startServer(b, kind)
			takeover(b, s, implsFor(kind))
		})
	}
}

// takeoverResult is one round: whether the successor held the lock within
// takeoverCap, and when, from the call that blackholed the proxy.
type takeoverResult struct {
	tookOver bool
	took     time.Duration
	// For a holder that is told (a lease whose context ends): how long
	// before the successor's grant it was told; told is false when it
	// was not told by then.
	margin   time.Duration
	told     bool
	tellable bool
}

// teller is a client whose lease tells its holder of a loss.
type teller interface{ toldAt() time.Time }

func takeover(b *testing.B, s *server, impls []impl) {
	ctx := bounded(b, benchLimit)
	proxy := harness.NewProxy(b, s.addr)
	results := make([][]takeoverResult, len(impls))
	for r := 0; b.Loop(); r++ {
		for k := range impls {
			i := (r + k) % len(impls)
			res, err := takeoverRound(ctx, b, s, proxy, impls[i], fmt.Sprintf("takeover-%s-%d", impls[i].name, r))
			if err != nil {
				b.Fatalf("%s: %v", impls[i].name, err)
			}
			results[i] = append(results[i], res)
		}
	}
	b.StopTimer()
	var tab strings.Builder
	fmt.Fprintf(&tab, "\n| impl | rounds | took over within %v | median takeover ms | max takeover ms | holder told first | told-first margin ms: min / median |\n|---|---|---|---|---|---|---|\n", takeoverCap)
	for i, im := range impls {
		var took, margins []time.Duration
		told, tellable := 0, false
		for _, r := range results[i] {
			if r.tookOver {
				took = append(took, r.took)
			}
			if r.told {
				told++
				margins = append(margins, r.margin)
			}
			tellable = tellable || r.tellable
		}
		if len(took) == 0 {
			fmt.Fprintf(&tab, "| %s | %d | 0: not within %v | - | - | - | - |\n", im.name, len(results[i]), takeoverCap)
			b.ReportMetric(0, im.name+"-tookover")
			continue
		}
		b.ReportMetric(float64(len(took))/float64(len(results[i])), im.name+"-tookover")
		b.ReportMetric(ms(lockbench.Median(took)), im.name+"-takeover-ms")
		toldCol, marginCol := "never (nothing tells it)", "-"
		if tellable {
			toldCol = fmt.Sprintf("%d of %d", told, len(took))
		}
		if len(margins) > 0 {
			marginCol = fmt.Sprintf("%.1f / %.1f", ms(lockbench.Quantile(margins, 0)), ms(lockbench.Median(margins)))
			b.ReportMetric(ms(lockbench.Quantile(margins, 0)), im.name+"-min-margin-ms")
		}
		fmt.Fprintf(&tab, "| %s | %d | %d | %.1f | %.1f | %s | %s |\n", im.name, len(results[i]), len(took),
			ms(lockbench.Median(took)), ms(lockbench.Quantile(took, 1)), toldCol, marginCol)
	}
	table(b, "%s, holder's connection blackholed (not closed), successor waiting, cap %v:%s", s.kind, takeoverCap, tab.String())
}

// takeoverRound runs one round of im on the lock name.
func takeoverRound(ctx context.Context, b *testing.B, s *server, proxy *harness.Proxy, im impl, name string) (takeoverResult, error) {
	ctx, cancel := context.WithTimeout(ctx, takeoverCap+2*time.Minute)
	defer cancel()
	holder, err := im.open(ctx, s.through(proxy.Addr()), name, nil)
	if err != nil {
		return takeoverResult{}, fmt.Errorf("holder: %w", err)
	}
	defer func() { _ = holder.close() }()
	successor, err := im.open(ctx, s.dsn, name, nil)
	if err != nil {
		return takeoverResult{}, fmt.Errorf("successor: %w", err)
	}
	defer func() { _ = successor.close() }()

	release, err := holder.lock(ctx)
	if err != nil {
		return takeoverResult{}, fmt.Errorf("holder: %w", err)
	}
	type got struct {
		at      time.Time
		release func(context.Context) error
		err     error
	}
	granted := make(chan got, 1)
	go func() {
		rel, err := successor.lock(ctx)
		granted <- got{time.Now(), rel, err}
	}()
	time.Sleep(takeoverSettle)
	select {
	case g := <-granted:
		return takeoverResult{}, fmt.Errorf("the successor got the lock from a live holder (err %v)", g.err)
	default:
	}

	blackholed := time.Now()
	proxy.Blackhole(b)
	var res takeoverResult
	var g got
	waited := false
	select {
	case g = <-granted:
		waited = true
		if g.err == nil {
			res.tookOver, res.took = true, g.at.Sub(blackholed)
			if h, ok := holder.(teller); ok {
				res.tellable = true
				if at := h.toldAt(); !at.IsZero() && !at.After(g.at) {
					res.told, res.margin = true, g.at.Sub(at)
				}
			}
		}
	case <-time.After(takeoverCap):
	}
	// Undo: the holder's connection comes back, the holder releases, and
	// a successor still waiting gets the lock (a hand-off).
	proxy.Restore(b)
	if err := release(ctx); err != nil && !res.tookOver {
		return res, fmt.Errorf("holder's release after restore: %w", err)
	}
	if !waited {
		g = <-granted
	}
	if g.err != nil {
		return res, fmt.Errorf("successor: %w", g.err)
	}
	return res, g.release(ctx)
}
