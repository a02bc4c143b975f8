package harness

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Bounds of the waits for an ensemble to serve and to elect a leader.
const (
	zkReadyTimeout  = 60 * time.Second
	zkLeaderTimeout = 30 * time.Second
)

// ZK is a ZooKeeper server or ensemble for a test: local java processes,
// servers from a ZKSource, or the servers named by ZK_SERVERS.
type ZK struct {
	members   []*ZKMember            // the voters, then the observers
	secure    []string               // the members' TLS client addresses (StartZKTLS)
	observers int                    // how many of members observe (StartZKObserved)
	links     map[*ZKMember][]*Proxy // a member's proxies to the others (StartZKObserved, StartZKCuttable)
	root      string                 // temp dir of local members, removed by Close
	external  bool                   // from ZK_SERVERS
	closer    func() error           // extra cleanup (a ZKSource's)

	closeOnce sync.Once
	closeErr  error
}

// StartZK gives t a ZooKeeper of members servers (1: standalone, 3: an
// ensemble), serving and with a leader, stopped with everything it left on
// disk by t.Cleanup. When ZK_SERVERS is set those servers are used instead.
// When none can be had, t is ended by Unavailable.
func StartZK(t testing.TB, members int) *ZK {
	t.Helper()
	z, err := LaunchZK(members)
	if err != nil {
		skipOrFail(t, "zookeeper", err)
	}
	z.closeAtCleanup(t)
	return z
}

// closeAtCleanup has t.Cleanup close z, after writing the end of its logs to
// t when t failed.
func (z *ZK) closeAtCleanup(t testing.TB) {
	t.Cleanup(func() {
		if t.Failed() {
			z.logTails(t)
		}
		if err := z.Close(); err != nil {
			t.Errorf("stop zookeeper: %v", err)
		}
	})
}

// LaunchZK is StartZK without a testing.TB, e.g. for a TestMain: the caller
// must Close the result. The error wraps ErrUnavailable when no ZooKeeper can
// be had (see Unavailable for what the test should do then).
//
// Sources, in order: ZK_SERVERS (comma separated host:port, at least members
// of them); a local install (ZOOKEEPER_HOME, or Debian's zookeeper package and
// java); a zookeeper:3.8 container through a Docker daemon (one member only).
func LaunchZK(members int) (*ZK, error) {
	if members < 1 {
		return nil, fmt.Errorf("LaunchZK: members = %d, want at least 1", members)
	}
	if s := os.Getenv("ZK_SERVERS"); s != "" {
		addrs := splitAddrs(s)
		if len(addrs) < members {
			return nil, unavailablef("ZK_SERVERS lists %d servers, the test needs %d: start an ensemble, "+
				"or unset ZK_SERVERS to have one started from a local install", len(addrs), members)
		}
		z := &ZK{external: true}
		for i, a := range addrs {
			z.members = append(z.members, &ZKMember{id: i + 1, addr: a})
		}
		return z, nil
	}
	in, localErr := findZKInstall()
	if localErr == nil {
		z, err := launchLocalZK(in, members)
		if err != nil && strings.Contains(err.Error(), "Address already in use") {
			// Another process took a port between freePorts and the bind.
			z, err = launchLocalZK(in, members)
		}
		return z, err
	}
	if !errors.Is(localErr, ErrUnavailable) {
		return nil, localErr
	}
	if ZKSource == nil {
		return nil, fmt.Errorf("no local zookeeper (%w); %s", localErr, zkHint)
	}
	z, err := ZKSource(members)
	if err != nil && errors.Is(err, ErrUnavailable) {
		return nil, fmt.Errorf("no local zookeeper (%v), nor from the other source (%w); %s", localErr, err, zkHint)
	}
	return z, err
}

// launchLocalZK starts members java processes in a fresh temp dir and waits
// until all serve.
func launchLocalZK(in *zkInstall, members int) (*ZK, error) {
	ensemble, err := freeZKPorts(members)
	if err != nil {
		return nil, err
	}
	return startLocalZK(in, ensemble, func(int) []zkPorts { return ensemble })
}

// freeZKPorts returns free client, peer and election ports for members.
func freeZKPorts(members int) ([]zkPorts, error) {
	ports, err := FreePorts(3 * members)
	if err != nil {
		return nil, err
	}
	ensemble := make([]zkPorts, members)
	for i := range ensemble {
		ensemble[i] = zkPorts{client: ports[3*i], peer: ports[3*i+1], election: ports[3*i+2]}
	}
	return ensemble, nil
}

// startLocalZK starts a java process for each member of ensemble in a fresh
// temp dir, member id listing the ensemble as view(id) gives it, and waits
// until all serve.
func startLocalZK(in *zkInstall, ensemble []zkPorts, view func(id int) []zkPorts) (*ZK, error) {
	return startLocalZKWith(in, ensemble, view, nil)
}

// startLocalZKWith is startLocalZK with extra(id)'s lines appended to the
// zoo.cfg of member id (a key given again there overrides the default's).
func startLocalZKWith(in *zkInstall, ensemble []zkPorts, view func(id int) []zkPorts, extra func(id int) string) (*ZK, error) {
	root, err := os.MkdirTemp("", "zkr-zk-")
	if err != nil {
		return nil, err
	}
	z := &ZK{root: root}
	for id := 1; id <= len(ensemble); id++ {
		p, err := zkMemberDir(in, root, id, view(id))
		if err != nil {
			z.Close()
			return nil, err
		}
		if extra != nil {
			if err := appendFile(filepath.Join(p.dir, "zoo.cfg"), extra(id)); err != nil {
				z.Close()
				return nil, err
			}
		}
		z.members = append(z.members, &ZKMember{id: id, addr: hostPort(ensemble[id-1].client), ctl: localControl{p}})
		if err := p.start(); err != nil {
			z.Close()
			return nil, err
		}
	}
	if err := z.waitReady(zkReadyTimeout); err != nil {
		z.Close()
		return nil, err
	}
	// A member may serve its clients while its quorum or election
	// listener could not bind (a port taken between freeZKPorts and the
	// bind): ZooKeeper retries that bind a few times in the background and
	// then exits, after the ensemble looked ready. Its log already says so:
	// the callers start the ensemble again on this error.
	for _, m := range z.members {
		if tail := m.ctl.logTail(400); strings.Contains(tail, "Address already in use") {
			z.Close()
			return nil, fmt.Errorf("%s: a port was taken: Address already in use", m)
		}
	}
	return z, nil
}

// Close stops every member this ZK started (SIGTERM, then SIGKILL) and
// removes its temp dir. Servers from ZK_SERVERS are left alone. Close may be
// called more than once.
func (z *ZK) Close() error {
	z.closeOnce.Do(func() {
		var wg sync.WaitGroup
		errs := make([]error, len(z.members))
		for i, m := range z.members {
			if m.ctl == nil {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = m.ctl.stop()
			}()
		}
		wg.Wait()
		if z.closer != nil {
			errs = append(errs, z.closer())
		}
		if z.root != "" {
			errs = append(errs, os.RemoveAll(z.root))
		}
		z.closeErr = errors.Join(errs...)
	})
	return z.closeErr
}

// Servers returns the client address ("127.0.0.1:port") of every member, in
// member order: the connect string of the ensemble.
func (z *ZK) Servers() []string {
	out := make([]string, len(z.members))
	for i, m := range z.members {
		out[i] = m.addr
	}
	return out
}

// ConnectString is Servers joined with commas.
func (z *ZK) ConnectString() string { return strings.Join(z.Servers(), ",") }

// Members returns the members in order; Members()[i].ID() == i+1.
func (z *ZK) Members() []*ZKMember { return append([]*ZKMember(nil), z.members...) }

// External reports whether the servers come from ZK_SERVERS; their members
// cannot be stopped, started or paused (those calls are Unavailable:
// they skip the test, or fail it when Required).
func (z *ZK) External() bool { return z.external }

// Leader returns the member whose `srvr` says Mode: leader (or standalone),
// among the running, unpaused members, waiting (bounded) until there is one;
// t fails when none appears.
func (z *ZK) Leader(t testing.TB) *ZKMember {
	t.Helper()
	var leader *ZKMember
	err := waitFor(nil, "a zookeeper leader", zkLeaderTimeout, 100*time.Millisecond, func() error {
		var modes []string
		for _, m := range z.members {
			if !m.Running() || m.Paused() {
				continue
			}
			mode, err := m.Mode()
			if err == nil && (mode == "leader" || mode == "standalone") {
				leader = m
				return nil
			}
			modes = append(modes, fmt.Sprintf("member %d: %s%v", m.id, mode, errOrNil(err)))
		}
		return fmt.Errorf("no leader yet: %s", strings.Join(modes, "; "))
	})
	if err != nil {
		t.Fatal(err)
	}
	return leader
}

// WaitReady waits (bounded, 60s) until every running, unpaused member answers
// ruok with imok and `srvr` shows it serving; t fails otherwise.
func (z *ZK) WaitReady(t testing.TB) {
	t.Helper()
	if err := z.waitReady(zkReadyTimeout); err != nil {
		t.Fatal(err)
	}
}

// waitReady is WaitReady with an error; the timeout covers all members.
func (z *ZK) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, m := range z.members {
		if !m.Running() || m.Paused() {
			continue
		}
		var p *process
		if m.ctl != nil {
			p = m.ctl.watched()
		}
		err := waitFor(p, m.String()+" serving", time.Until(deadline), 100*time.Millisecond, func() error {
			if err := ruok(m.addr); err != nil {
				return err
			}
			_, err := m.Mode()
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// logTails writes the end of every member's log to t, after a failure.
func (z *ZK) logTails(t testing.TB) {
	for _, m := range z.members {
		if m.ctl != nil {
			t.Logf("%s:\n%s", m, m.ctl.logTail(30))
		}
	}
}

// errOrNil formats err as " (err)" or nothing.
func errOrNil(err error) string {
	if err == nil {
		return ""
	}
	return " (" + err.Error() + ")"
}

// appendFile appends text to the file at path.
func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(text)
	return errors.Join(err, f.Close())
}
