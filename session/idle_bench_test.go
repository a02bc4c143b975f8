package session_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/session"
)

// What an idle session costs its ensemble, per session timeout t: the
// requests the server reads (go-zookeeper's pings, the watchdog's
// keepalives, and its rounds of proof that the leader hears the session:
// syncs and check-only writes) and the writes among them (zxids used).
// One client alone on a standalone server, idle for idleTimeouts × t.
//
//	go test -run '^$' -bench IdleSession -benchtime 1x ./session/
func BenchmarkIdleSession(b *testing.B) {
	const t, idleTimeouts = 2 * time.Second, 5
	z := harness.StartZK(b, 1)
	addr := z.Servers()[0]
	var requests, writes float64
	for range b.N {
		c := zktest.Connect(b, z.Servers(), session.WithSessionTimeout(t))
		time.Sleep(t) // past the connection's first requests
		p0, x0 := packets(b, addr), zxid(b, addr)
		time.Sleep(idleTimeouts * t)
		p1, x1 := packets(b, addr), zxid(b, addr)
		c.Close()
		requests += float64(p1-p0-1) / idleTimeouts // less the mntr of p0
		writes += float64(x1-x0) / idleTimeouts
	}
	b.ReportMetric(requests/float64(b.N), "requests/timeout")
	b.ReportMetric(writes/float64(b.N), "writes/timeout")
}

func packets(b *testing.B, addr string) int64 {
	m, err := harness.Mntr(addr)
	if err != nil {
		b.Fatal(err)
	}
	n, err := strconv.ParseInt(m["zk_packets_received"], 10, 64)
	if err != nil {
		b.Fatalf("zk_packets_received: %v", err)
	}
	return n
}

func zxid(b *testing.B, addr string) int64 {
	out, err := harness.FourLetterWord(addr, "srvr")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "Zxid: "); ok {
			n, err := strconv.ParseInt(strings.TrimPrefix(strings.TrimSpace(v), "0x"), 16, 64)
			if err != nil {
				b.Fatalf("zxid %q: %v", v, err)
			}
			return n & 0xffffffff
		}
	}
	b.Fatalf("no Zxid in srvr: %q", out)
	return 0
}
