package harness

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// quietLogger keeps the zk client from logging to stderr.
type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// zkClient is a go-zookeeper connection with a record of its session states.
type zkClient struct {
	*zk.Conn
	mu     sync.Mutex
	states []zk.State
}

// connectZK connects a go-zookeeper client and waits until it has a session.
func connectZK(t *testing.T, servers []string, sessionTimeout time.Duration) *zkClient {
	t.Helper()
	c := &zkClient{}
	record := func(ev zk.Event) {
		if ev.Type == zk.EventSession {
			c.mu.Lock()
			c.states = append(c.states, ev.State)
			c.mu.Unlock()
		}
	}
	conn, _, err := zk.Connect(servers, sessionTimeout,
		zk.WithLogger(quietLogger{}), zk.WithLogInfo(false), zk.WithEventCallback(record))
	if err != nil {
		t.Fatal(err)
	}
	c.Conn = conn
	t.Cleanup(conn.Close)
	c.waitState(t, c.mark(), zk.StateHasSession, 20*time.Second)
	return c
}

// mark returns the number of states recorded so far, for waitState.
func (c *zkClient) mark() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.states)
}

// waitState waits until the client has entered state want after mark.
func (c *zkClient) waitState(t *testing.T, mark int, want zk.State, timeout time.Duration) {
	t.Helper()
	err := waitFor(nil, "zk client entering "+want.String(), timeout, 10*time.Millisecond, func() error {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, s := range c.states[mark:] {
			if s == want {
				return nil
			}
		}
		return fmt.Errorf("states since mark: %v", c.states[mark:])
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestSingleZK(t *testing.T) {
	z := StartZK(t, 1)
	if z.External() {
		Unavailable(t, "stopping and starting a member needs a server this harness starts; ZK_SERVERS is set")
	}
	m := z.Members()[0]
	if got := z.Servers(); len(got) != 1 || got[0] != m.Addr() || !strings.HasPrefix(m.Addr(), "127.0.0.1:") {
		t.Fatalf("Servers() = %v, member addr %s", got, m.Addr())
	}
	if got := m.FourLetter(t, "ruok"); got != "imok" {
		t.Fatalf("ruok = %q", got)
	}
	if srvr := m.FourLetter(t, "srvr"); !strings.Contains(srvr, "Mode: standalone") {
		t.Fatalf("srvr:\n%s", srvr)
	}
	mntr, err := Mntr(m.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if mntr["zk_server_state"] != "standalone" || !strings.HasPrefix(mntr["zk_version"], "3.") {
		t.Fatalf("mntr = %v", mntr)
	}
	if l := z.Leader(t); l != m {
		t.Fatalf("Leader = %v, want %v", l, m)
	}

	// Data survives Stop and Start: the member keeps its data dir and port.
	conn := connectZK(t, z.Servers(), 4*time.Second)
	if _, err := conn.Create("/kept", []byte("v"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	m.Stop(t)
	if m.Running() {
		t.Fatal("running after Stop")
	}
	if _, err := FourLetterWord(m.Addr(), "ruok"); err == nil {
		t.Fatal("ruok answered after Stop")
	}
	m.Start(t)
	z.WaitReady(t)
	conn = connectZK(t, z.Servers(), 4*time.Second)
	if data, _, err := conn.Get("/kept"); err != nil || string(data) != "v" {
		t.Fatalf("Get /kept after restart = %q, %v", data, err)
	}
}

func TestEnsembleFailover(t *testing.T) {
	z := StartZK(t, 3)
	if z.External() {
		Unavailable(t, "killing and pausing members needs servers this harness starts; ZK_SERVERS is set")
	}
	if n := len(z.Servers()); n != 3 {
		t.Fatalf("%d servers", n)
	}
	leader := z.Leader(t)
	mntr, err := Mntr(leader.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if mntr["zk_server_state"] != "leader" || mntr["zk_synced_followers"] != "2" {
		t.Fatalf("leader mntr: state %q synced followers %q", mntr["zk_server_state"], mntr["zk_synced_followers"])
	}
	conn := connectZK(t, z.Servers(), 10*time.Second)
	if _, err := conn.Create("/before", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	start, mark := time.Now(), conn.mark()
	leader.Kill(t)
	next := z.Leader(t)
	if next == leader {
		t.Fatalf("leader %v still leader after Kill", leader)
	}
	t.Logf("new leader %v elected %v after the kill", next, time.Since(start).Round(time.Millisecond))
	if conn.Server() == leader.Addr() {
		conn.waitState(t, mark, zk.StateHasSession, 20*time.Second)
	}
	// The client may have been on a follower that stopped serving during the
	// election: retry until the ensemble serves it again.
	err = waitFor(nil, "Get /before after failover", 20*time.Second, 100*time.Millisecond, func() error {
		_, _, err := conn.Get("/before")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	leader.Start(t)
	z.WaitReady(t)
	if mode, err := leader.Mode(); err != nil || mode != "follower" {
		t.Fatalf("restarted old leader: mode %q, %v", mode, err)
	}

	// Pause a follower: it answers nothing, the others go on; Resume brings it back.
	var follower *ZKMember
	for _, m := range z.Members() {
		if m != next {
			follower = m
			break
		}
	}
	follower.Pause(t)
	if !follower.Paused() {
		t.Fatal("not Paused after Pause")
	}
	if r, err := exchange(follower.Addr(), "ruok", 500*time.Millisecond, nil); err == nil {
		t.Fatalf("paused member answered ruok: %q", r)
	}
	if l := z.Leader(t); l != next {
		t.Fatalf("leader changed to %v while a follower was paused", l)
	}
	follower.Resume(t)
	z.WaitReady(t)
	if mode, err := follower.Mode(); err != nil || mode != "follower" {
		t.Fatalf("resumed follower: mode %q, %v", mode, err)
	}
}

func TestExternalZK(t *testing.T) {
	addr := StartZK(t, 1).Servers()[0] // the first of ZK_SERVERS when it is set
	t.Setenv("ZK_SERVERS", addr+" ,")
	z := StartZK(t, 1)
	if !z.External() || len(z.Servers()) != 1 || z.Servers()[0] != addr {
		t.Fatalf("external ZK: external=%v servers=%v", z.External(), z.Servers())
	}
	if l := z.Leader(t); l.Addr() != addr {
		t.Fatalf("leader %v", l)
	}
	checkCannotControl(t, "Stop of an external member", "ZK_SERVERS", z.Members()[0].Stop)
	if _, err := LaunchZK(3); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("LaunchZK(3) with one ZK_SERVERS: %v, want ErrUnavailable", err)
	}
}

// checkCannotControl checks that control, a fault on a server the harness
// did not start, skips the test, and fails it when Required (a run that
// must test everything cannot be green with its faults skipped), with a
// message that names env, where the server came from.
func checkCannotControl(t *testing.T, what, env string, control func(testing.TB)) {
	t.Helper()
	t.Setenv(RequireEnv, "0")
	if end := endOf(t, control); !end.skipped || end.failed {
		t.Errorf("%s without %s: %+v, want a skip", what, RequireEnv, end)
	}
	t.Setenv(RequireEnv, "1")
	end := endOf(t, control)
	if !end.failed || end.skipped {
		t.Errorf("%s with %s=1: %+v, want a failure", what, RequireEnv, end)
	}
	if !strings.Contains(end.msg, env) {
		t.Errorf("%s with %s=1: the failure %q does not name %s", what, RequireEnv, end.msg, env)
	}
}

// ending is how a function given a testing.TB ended: skipped, failed, or
// neither (it returned), and the message.
type ending struct {
	skipped, failed bool
	msg             string
}

// endOf runs f with a testing.TB that records how it ends instead of ending
// t: Skip and Fatal stop f's goroutine, as testing's do. Everything else
// goes to t.
func endOf(t *testing.T, f func(testing.TB)) ending {
	r := &recordingT{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r.end
}

// recordingT is endOf's testing.TB.
type recordingT struct {
	testing.TB
	end ending
}

func (r *recordingT) Helper() {}
func (r *recordingT) Skip(args ...any) {
	r.end = ending{skipped: true, msg: fmt.Sprint(args...)}
	runtime.Goexit()
}
func (r *recordingT) Skipf(f string, args ...any) { r.Skip(fmt.Sprintf(f, args...)) }
func (r *recordingT) Fatal(args ...any) {
	r.end = ending{failed: true, msg: fmt.Sprint(args...)}
	runtime.Goexit()
}
func (r *recordingT) Fatalf(f string, args ...any) { r.Fatal(fmt.Sprintf(f, args...)) }

func TestNothingInstalled(t *testing.T) {
	old := debianZKJar
	debianZKJar = "/nonexistent/zookeeper.jar"
	t.Cleanup(func() { debianZKJar = old })
	t.Setenv("ZK_SERVERS", "")
	t.Setenv("ZOOKEEPER_HOME", "")
	oldSource := ZKSource
	ZKSource = nil
	t.Cleanup(func() { ZKSource = oldSource })
	_, err := LaunchZK(1)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("LaunchZK without an install: %v, want ErrUnavailable", err)
	}
	t.Logf("LaunchZK: %v", err)

	t.Setenv(RequireEnv, "0")
	var sub testing.TB
	t.Run("skips", func(t *testing.T) { sub = t; StartZK(t, 1) })
	if !sub.Skipped() {
		t.Fatal("StartZK did not skip without a server")
	}
}

// FreePorts never hands out a port twice in one process, also when the
// first was released and is free again (a server's port, freed for the
// server to bind, must not become another's before it does).
func TestFreePortsNeverTwice(t *testing.T) {
	seen := map[int]bool{}
	for i := 0; i < 200; i++ {
		ports, err := FreePorts(1 + i%3)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ports {
			if seen[p] {
				t.Fatalf("port %d handed out twice", p)
			}
			seen[p] = true
		}
	}
}
