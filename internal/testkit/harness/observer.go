package harness

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// StartZKObserved gives t a ZooKeeper ensemble of voters voting members
// (ids 1 to voters) and observers non-voting ones (the ids after), serving,
// with a leader, and stopped by t.Cleanup as StartZK's. Members and Servers
// list them all, voters first; Voters, VoterServers and Observers split them.
//
// An observer reaches every voter's quorum and election ports through a
// Proxy of its own (its zoo.cfg lists the proxies' addresses; the voters list
// each other and the observers directly), so that CutObserver can partition
// it from the quorum while its clients still reach it. An observer learns the
// leader's id from the election and connects to the leader's quorum address
// as its own zoo.cfg gives it; its election connections to the voters go
// through the proxies too, as the observer opens them (voters send their
// election notifications to voters only, and a connection between two
// members is kept only when the one with the higher id opened it).
//
// Observers need a local install: with ZK_SERVERS set, or none installed,
// t is ended by Unavailable.
func StartZKObserved(t testing.TB, voters, observers int) *ZK {
	t.Helper()
	if voters < 1 || observers < 0 {
		t.Fatalf("StartZKObserved: %d voters and %d observers, want at least 1 voter", voters, observers)
	}
	if os.Getenv("ZK_SERVERS") != "" {
		Unavailable(t, "zookeeper: observers need servers this harness starts, and ZK_SERVERS is set; "+
			"unset it to have an ensemble started from a local install")
	}
	in, err := findZKInstall()
	if err != nil {
		skipOrFail(t, "zookeeper with observers", fmt.Errorf("%w; %s", err, zkHint))
	}
	z, err := launchObservedZK(t, in, voters, observers)
	if err != nil && strings.Contains(err.Error(), "Address already in use") {
		// Another process took a port between freeZKPorts and the bind.
		z, err = launchObservedZK(t, in, voters, observers)
	}
	if err != nil {
		skipOrFail(t, "zookeeper with observers", err)
	}
	z.closeAtCleanup(t) // registered after the proxies' cleanups: runs before them
	return z
}

// launchObservedZK starts the members of StartZKObserved, each observer with
// a proxy per voter port, closed by t.Cleanup.
func launchObservedZK(t testing.TB, in *zkInstall, voters, observers int) (*ZK, error) {
	ensemble, err := freeZKPorts(voters + observers)
	if err != nil {
		return nil, err
	}
	views := make(map[int][]zkPorts) // by observer id
	links := make(map[int][]*Proxy)  // by observer id
	for id := voters + 1; id <= voters+observers; id++ {
		ensemble[id-1].observer = true
	}
	for id := voters + 1; id <= voters+observers; id++ {
		view := append([]zkPorts(nil), ensemble...)
		for i := range voters {
			peer, election := NewProxy(t, hostPort(ensemble[i].peer)), NewProxy(t, hostPort(ensemble[i].election))
			view[i].peer, view[i].election = proxyPort(t, peer), proxyPort(t, election)
			links[id] = append(links[id], peer, election)
		}
		views[id] = view
	}
	z, err := startLocalZK(in, ensemble, func(id int) []zkPorts {
		if v, ok := views[id]; ok {
			return v
		}
		return ensemble
	})
	if err != nil {
		return nil, err
	}
	z.observers = observers
	z.links = make(map[*ZKMember][]*Proxy)
	for _, m := range z.Observers() {
		z.links[m] = links[m.id]
	}
	return z, nil
}

// proxyPort is the port p listens on.
func proxyPort(t testing.TB, p *Proxy) int {
	t.Helper()
	_, port, err := net.SplitHostPort(p.Addr())
	if err == nil {
		var n int
		if n, err = strconv.Atoi(port); err == nil {
			return n
		}
	}
	t.Fatalf("proxy address %s: %v", p.Addr(), err)
	return 0
}

// Voters returns the voting members, in order: all members but for an
// ensemble of StartZKObserved.
func (z *ZK) Voters() []*ZKMember {
	return append([]*ZKMember(nil), z.members[:len(z.members)-z.observers]...)
}

// VoterServers returns the client addresses of the voters, in order: a
// connect string that reaches no observer.
func (z *ZK) VoterServers() []string {
	var out []string
	for _, m := range z.Voters() {
		out = append(out, m.addr)
	}
	return out
}

// Followers returns the voters that are not the leader (Leader's), in
// order: any one of them can be cut off, stopped or paused while the
// others keep a quorum, on an ensemble of at least 3 voters.
func (z *ZK) Followers(t testing.TB) []*ZKMember {
	t.Helper()
	lead := z.Leader(t)
	var out []*ZKMember
	for _, m := range z.Voters() {
		if m != lead {
			out = append(out, m)
		}
	}
	return out
}

// Observers returns the observers of an ensemble of StartZKObserved, in
// order; none for any other ZK.
func (z *ZK) Observers() []*ZKMember {
	return append([]*ZKMember(nil), z.members[len(z.members)-z.observers:]...)
}

// CutObserver partitions observer m from the quorum: Blackhole on each of
// its proxies to the voters, so its connections to them stay open and
// neither side hears anything, until RestoreObserver. Its clients still
// reach it. ZooKeeper's observer reads from the leader with a timeout of
// syncLimit ticks (2s here); when it passes, the observer stops serving,
// drops its clients' connections and looks for a leader, which it cannot
// reach. The leader meanwhile hears nothing of the sessions of the
// observer's clients, and expires them one session timeout after it last
// heard of them. t fails when m is not an observer of z.
func (z *ZK) CutObserver(t testing.TB, m *ZKMember) {
	t.Helper()
	z.CutMember(t, m)
}

// RestoreObserver ends CutObserver: what was held is delivered, and the
// observer rejoins the quorum once it has found the leader again (wait for
// it with WaitReady).
func (z *ZK) RestoreObserver(t testing.TB, m *ZKMember) {
	t.Helper()
	z.RestoreMember(t, m)
}

// observerLinks returns m's proxies to the voters; t fails when m has none.
func (z *ZK) observerLinks(t testing.TB, m *ZKMember) []*Proxy {
	t.Helper()
	return z.memberLinks(t, m)
}
