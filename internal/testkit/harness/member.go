package harness

import (
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"
)

// memberStartTimeout bounds the wait for a (re)started member to answer ruok.
const memberStartTimeout = 60 * time.Second

// control is how a member's server is stopped, started and signalled: a local
// process or a container. External servers have none.
type control interface {
	start() error
	stop() error
	kill() error
	pause() error
	resume() error
	running() bool
	isPaused() bool
	// logTail returns the end of the server's log, for failure messages.
	logTail(n int) string
	// watched is the local process whose exit ends a wait early, or nil.
	watched() *process
}

// ErrNotControllable matches (errors.Is) the errors of member control
// (StopErr, StartErr, ...) for a member that cannot be controlled: one from
// ZK_SERVERS, or a container operation without a Docker API client. The
// testing.TB variants skip the test on it, or fail it when Required.
var ErrNotControllable = errors.New("member cannot be controlled")

// ZKMember is one ZooKeeper server of a ZK: a local java process, a container,
// or an address taken from ZK_SERVERS (then it cannot be controlled).
type ZKMember struct {
	id   int
	addr string
	ctl  control // nil for external servers
}

// ID is the member's 1-based server id (its myid), matching its index in
// ZK.Members plus one.
func (m *ZKMember) ID() int { return m.id }

// Addr is the member's client address, "127.0.0.1:port" for servers started
// here. It stays the same across Stop and Start.
func (m *ZKMember) Addr() string { return m.addr }

// String describes the member for messages.
func (m *ZKMember) String() string { return fmt.Sprintf("zookeeper member %d (%s)", m.id, m.addr) }

// Running reports whether the member's server is running (paused counts as
// running). External members always count as running.
func (m *ZKMember) Running() bool { return m.ctl == nil || m.ctl.running() }

// Paused reports whether the member was paused with Pause and not resumed.
func (m *ZKMember) Paused() bool { return m.ctl != nil && m.ctl.isPaused() }

// Stop stops the member: SIGTERM, then a bounded wait for its exit, then
// SIGKILL if it has not gone. A paused member is resumed so it can exit.
// Stopping a stopped member does nothing.
func (m *ZKMember) Stop(t testing.TB) { t.Helper(); m.must(t, "stop", m.StopErr()) }

// StopErr is Stop for callers without a testing.TB.
func (m *ZKMember) StopErr() error {
	return m.control(func(c control) error { return c.stop() })
}

// Start starts a stopped or killed member again, with the same data directory
// and ports, and waits (bounded) until it answers ruok. It may not serve yet:
// a quorum member serves once it has joined a quorum; see ZK.WaitReady.
func (m *ZKMember) Start(t testing.TB) { t.Helper(); m.must(t, "start", m.StartErr()) }

// StartErr is Start for callers without a testing.TB.
func (m *ZKMember) StartErr() error {
	return m.control(func(c control) error {
		if err := c.start(); err != nil {
			return err
		}
		return waitFor(c.watched(), m.String()+" answering ruok", memberStartTimeout, 100*time.Millisecond,
			func() error { return ruok(m.addr) })
	})
}

// Kill kills the member with SIGKILL (no shutdown at all) and reaps it.
func (m *ZKMember) Kill(t testing.TB) { t.Helper(); m.must(t, "kill", m.KillErr()) }

// KillErr is Kill for callers without a testing.TB.
func (m *ZKMember) KillErr() error {
	return m.control(func(c control) error { return c.kill() })
}

// Pause freezes the member with SIGSTOP: its connections stay open but it
// answers nothing, as if hung or partitioned. Resume undoes it.
func (m *ZKMember) Pause(t testing.TB) { t.Helper(); m.must(t, "pause", m.PauseErr()) }

// PauseErr is Pause for callers without a testing.TB.
func (m *ZKMember) PauseErr() error {
	return m.control(func(c control) error { return c.pause() })
}

// Resume continues a paused member with SIGCONT.
func (m *ZKMember) Resume(t testing.TB) { t.Helper(); m.must(t, "resume", m.ResumeErr()) }

// ResumeErr is Resume for callers without a testing.TB.
func (m *ZKMember) ResumeErr() error {
	return m.control(func(c control) error { return c.resume() })
}

// FourLetter sends a four-letter command ("mntr", "srvr", "cons", "ruok", ...)
// to the member and returns the reply; t fails when the exchange fails.
func (m *ZKMember) FourLetter(t testing.TB, cmd string) string {
	t.Helper()
	reply, err := FourLetterWord(m.addr, cmd)
	if err != nil {
		t.Fatalf("%s: %v", m, err)
	}
	return reply
}

// Mode returns the member's `srvr` Mode (leader, follower, standalone), or an
// error when it does not answer or does not serve.
func (m *ZKMember) Mode() (string, error) { return serverMode(m.addr) }

// control runs op on the member's control; a member without one yields
// ErrNotControllable.
func (m *ZKMember) control(op func(control) error) error {
	if m.ctl == nil {
		return fmt.Errorf("%w: %s comes from ZK_SERVERS; control needs servers this harness starts", ErrNotControllable, m)
	}
	if err := op(m.ctl); err != nil {
		return fmt.Errorf("%s: %w", m, err)
	}
	return nil
}

// must ends t when err is not nil: for ErrNotControllable a skip, or a
// failure when Required (Unavailable); a failure otherwise.
func (m *ZKMember) must(t testing.TB, what string, err error) {
	t.Helper()
	switch {
	case err == nil:
	case errors.Is(err, ErrNotControllable):
		Unavailable(t, "cannot %s: %v", what, err)
	default:
		t.Fatalf("%s: %v", what, err)
	}
}

// localControl controls a member running as a local process.
type localControl struct{ p *process }

func (c localControl) start() error         { return c.p.start() }
func (c localControl) stop() error          { return c.p.stop(stopGrace) }
func (c localControl) kill() error          { return c.p.kill() }
func (c localControl) pause() error         { return c.p.signal(syscall.SIGSTOP) }
func (c localControl) resume() error        { return c.p.signal(syscall.SIGCONT) }
func (c localControl) running() bool        { return c.p.running() }
func (c localControl) isPaused() bool       { return c.p.isPaused() }
func (c localControl) logTail(n int) string { return c.p.logTail(n) }
func (c localControl) watched() *process    { return c.p }
