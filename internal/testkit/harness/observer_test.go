package harness

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

func TestObserverZooCfg(t *testing.T) {
	ensemble := []zkPorts{
		{client: 1, peer: 2, election: 3},
		{client: 4, peer: 5, election: 6, observer: true},
	}
	voter := zooCfg("/d", ensemble[0], ensemble)
	observer := zooCfg("/d", ensemble[1], ensemble)
	for _, line := range []string{"server.1=127.0.0.1:2:3\n", "server.2=127.0.0.1:5:6:observer\n"} {
		if !strings.Contains(voter, line) || !strings.Contains(observer, line) {
			t.Errorf("%q missing from a config:\nvoter:\n%s\nobserver:\n%s", line, voter, observer)
		}
	}
	if strings.Contains(voter, "peerType") || !strings.Contains(observer, "peerType=observer\n") {
		t.Errorf("peerType: voter:\n%s\nobserver:\n%s", voter, observer)
	}
}

// An observer serves a client connected to it alone, forwarding its writes;
// CutObserver partitions it from the voters through its proxies, so it stops
// serving and drops the client while the voters go on; RestoreObserver has it
// rejoin, with what the voters wrote meanwhile, and the client's session
// kept.
func TestObserver(t *testing.T) {
	z := StartZKObserved(t, 3, 1)
	observers, voters := z.Observers(), z.Voters()
	if len(observers) != 1 || len(voters) != 3 || len(z.Members()) != 4 {
		t.Fatalf("%d observers, %d voters, %d members", len(observers), len(voters), len(z.Members()))
	}
	obs := observers[0]
	if obs.ID() != 4 || strings.Contains(strings.Join(z.VoterServers(), ","), obs.Addr()) {
		t.Fatalf("observer %v, voter servers %v", obs, z.VoterServers())
	}
	if mode, err := obs.Mode(); err != nil || mode != "observer" {
		t.Fatalf("observer mode %q, %v", mode, err)
	}
	leader := z.Leader(t)
	mntr, err := Mntr(leader.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if mntr["zk_synced_followers"] != "2" || mntr["zk_synced_observers"] != "1" {
		t.Fatalf("leader mntr: synced followers %q, observers %q", mntr["zk_synced_followers"], mntr["zk_synced_observers"])
	}
	// The observer followed the leader through its proxy to the leader's
	// quorum port, its config's address, not the leader's own; and it took
	// part in the election through its proxies to the election ports.
	links := z.observerLinks(t, obs) // per voter: quorum, election
	if toLeader := links[2*(leader.ID()-1)]; toLeader.Accepted() == 0 {
		t.Fatalf("the observer's proxy to the leader's quorum port %s accepted nothing", toLeader.Upstream())
	}
	for i := 1; i < len(links); i += 2 {
		if links[i].Accepted() == 0 {
			t.Errorf("the observer's proxy to election port %s accepted nothing", links[i].Upstream())
		}
	}

	conn := connectZK(t, []string{obs.Addr()}, 20*time.Second)
	if _, err := conn.Create("/observed", []byte("o"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	voter := connectZK(t, z.VoterServers(), 20*time.Second)
	if data, _, err := voter.Get("/observed"); err != nil || string(data) != "o" {
		t.Fatalf("a voter's Get of the observer client's write = %q, %v", data, err)
	}

	session := conn.SessionID()
	mark, start := conn.mark(), time.Now()
	z.CutObserver(t, obs)
	err = waitFor(nil, "the cut observer not serving", 30*time.Second, 20*time.Millisecond, func() error {
		if mode, err := obs.Mode(); err == nil {
			return fmt.Errorf("still serving as %s", mode)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the observer stopped serving %v after the cut", time.Since(start).Round(time.Millisecond))
	conn.waitState(t, mark, zk.StateDisconnected, 30*time.Second)
	t.Logf("its client was disconnected %v after the cut", time.Since(start).Round(time.Millisecond))
	if _, err := voter.Create("/during-cut", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("the voters stopped serving with the observer cut: %v", err)
	}

	mark = conn.mark()
	z.RestoreObserver(t, obs)
	z.WaitReady(t)
	if mode, err := obs.Mode(); err != nil || mode != "observer" {
		t.Fatalf("restored observer mode %q, %v", mode, err)
	}
	conn.waitState(t, mark, zk.StateHasSession, 30*time.Second)
	if id := conn.SessionID(); id != session {
		t.Fatalf("session %#x after the restore, %#x before the cut", id, session)
	}
	if _, _, err := conn.Get("/during-cut"); err != nil {
		t.Fatalf("Get through the restored observer of what the voters wrote meanwhile: %v", err)
	}
}
