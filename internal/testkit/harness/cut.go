package harness

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// ZooKeeper's own timing, which StartZKCuttable can run instead of the
// harness's quick one (tickTime 200): what a deployment that changed
// nothing runs, in which a member cut off from the quorum answers its
// clients for syncLimit × tickTime = 10 s before it drops them.
const zkDefaultTiming = "tickTime=2000\ninitLimit=10\nsyncLimit=5\nminSessionTimeout=4000\nmaxSessionTimeout=40000\n"

// Timing is the zoo.cfg timing of an ensemble of StartZKCuttable.
type Timing int

const (
	// QuickTiming is the harness's: tickTime 200 ms, syncLimit 10 (2 s).
	QuickTiming Timing = iota
	// DefaultTiming is ZooKeeper's: tickTime 2000 ms, syncLimit 5 (10 s),
	// initLimit 10, session timeouts 4 s to 40 s.
	DefaultTiming
)

// StartZKCuttable gives t an ensemble of voters voting members and
// observers observing ones (the ids after the voters), serving with a
// leader, stopped by t.Cleanup as StartZK's, on timing. Every member
// reaches every other member's quorum port through a Proxy of its own, so
// that CutMember can cut any one member off from the rest while its
// clients still reach it. Election ports are reached directly (ZooKeeper
// 3.5+ dials an election peer back at the address its first message
// names, which a proxy would have to rewrite): a cut member still votes,
// but can neither follow nor lead, so it serves no client until
// RestoreMember.
//
// It needs a local install: with ZK_SERVERS set, or none installed, t is
// ended by Unavailable.
func StartZKCuttable(t testing.TB, voters, observers int, timing Timing) *ZK {
	t.Helper()
	if voters < 2 || observers < 0 {
		t.Fatalf("StartZKCuttable: %d voters and %d observers, want an ensemble", voters, observers)
	}
	if os.Getenv("ZK_SERVERS") != "" {
		Unavailable(t, "zookeeper: cutting a member needs servers this harness starts, and ZK_SERVERS is set; "+
			"unset it to have an ensemble started from a local install")
	}
	in, err := findZKInstall()
	if err != nil {
		skipOrFail(t, "zookeeper ensemble", fmt.Errorf("%w; %s", err, zkHint))
	}
	z, err := launchCuttableZK(t, in, voters, observers, timing)
	if err != nil && strings.Contains(err.Error(), "Address already in use") {
		z, err = launchCuttableZK(t, in, voters, observers, timing)
	}
	if err != nil {
		skipOrFail(t, "zookeeper ensemble", err)
	}
	z.closeAtCleanup(t) // registered after the proxies' cleanups: runs before them
	return z
}

// launchCuttableZK starts the members of StartZKCuttable.
func launchCuttableZK(t testing.TB, in *zkInstall, voters, observers int, timing Timing) (*ZK, error) {
	n := voters + observers
	ensemble, err := freeZKPorts(n)
	if err != nil {
		return nil, err
	}
	for id := voters + 1; id <= n; id++ {
		ensemble[id-1].observer = true
	}
	// links[i][j]: member i+1's proxy to member j+1's quorum port.
	links := make([][]*Proxy, n)
	views := make([][]zkPorts, n)
	for i := range n {
		links[i] = make([]*Proxy, n)
		views[i] = append([]zkPorts(nil), ensemble...)
		for j := range n {
			if i == j {
				continue
			}
			links[i][j] = NewProxy(t, hostPort(ensemble[j].peer))
			views[i][j].peer = proxyPort(t, links[i][j])
		}
	}
	var extra func(int) string
	if timing == DefaultTiming {
		extra = func(int) string { return zkDefaultTiming }
	}
	z, err := startLocalZKWith(in, ensemble, func(id int) []zkPorts { return views[id-1] }, extra)
	if err != nil {
		return nil, err
	}
	z.observers = observers
	z.links = make(map[*ZKMember][]*Proxy)
	for i, m := range z.members {
		for j := range n {
			if i != j {
				// Both ways: m's links to the others, and theirs to m.
				z.links[m] = append(z.links[m], links[i][j], links[j][i])
			}
		}
	}
	return z, nil
}

// CutMember cuts m off from the other members of an ensemble of
// StartZKCuttable: Blackhole on every link between m's quorum port and
// theirs, so that the connections stay open and nothing passes. Its
// clients still reach it. A follower or an observer reads from its leader
// with a timeout of syncLimit ticks: until it passes it answers its
// clients from its own state, then it drops them and looks for a leader it
// cannot reach. The leader meanwhile hears nothing of the sessions of m's
// clients, and expires them one session timeout after it last heard of
// them. t fails when m has no links (not of StartZKCuttable).
func (z *ZK) CutMember(t testing.TB, m *ZKMember) {
	t.Helper()
	for _, p := range z.memberLinks(t, m) {
		p.Blackhole(t)
	}
}

// RestoreMember ends CutMember: what was held is delivered, and m rejoins
// the quorum once it has found the leader again (wait for it with
// WaitReady).
func (z *ZK) RestoreMember(t testing.TB, m *ZKMember) {
	t.Helper()
	for _, p := range z.memberLinks(t, m) {
		p.Restore(t)
	}
}

// memberLinks returns m's proxies; t fails when m has none.
func (z *ZK) memberLinks(t testing.TB, m *ZKMember) []*Proxy {
	t.Helper()
	links, ok := z.links[m]
	if !ok {
		t.Fatalf("%s has no proxied links (StartZKCuttable, or an observer of StartZKObserved)", m)
	}
	return links
}
