package harness

import "fmt"

// ZKSource, when set, is where LaunchZK gets a ZooKeeper of members servers
// when none is installed locally; it returns an error that wraps
// ErrUnavailable when it cannot. The integration module sets it to its
// Docker path (testcontainers-go), which the core module does not link.
var ZKSource func(members int) (*ZK, error)

// Control is how a ZKSource controls one member's server.
type Control interface {
	Start() error
	Stop() error
	Kill() error
	Pause() error
	Resume() error
	Running() bool
	Paused() bool
	// LogTail returns the last n lines of the server's log.
	LogTail(n int) string
}

// NewZK is the ZK of the servers at addrs (member i at addrs[i], controlled
// by ctls[i]; a nil Control makes a member that cannot be controlled), with
// closer run by Close. It waits, bounded, until they serve.
func NewZK(addrs []string, ctls []Control, closer func() error) (*ZK, error) {
	if len(addrs) == 0 || len(ctls) != len(addrs) {
		return nil, fmt.Errorf("NewZK: %d addresses and %d controls", len(addrs), len(ctls))
	}
	z := &ZK{closer: closer}
	for i, a := range addrs {
		m := &ZKMember{id: i + 1, addr: a}
		if ctls[i] != nil {
			m.ctl = sourceControl{ctls[i]}
		}
		z.members = append(z.members, m)
	}
	if err := z.waitReady(zkReadyTimeout); err != nil {
		z.Close()
		return nil, err
	}
	return z, nil
}

// sourceControl adapts a ZKSource's Control.
type sourceControl struct{ c Control }

func (s sourceControl) start() error         { return s.c.Start() }
func (s sourceControl) stop() error          { return s.c.Stop() }
func (s sourceControl) kill() error          { return s.c.Kill() }
func (s sourceControl) pause() error         { return s.c.Pause() }
func (s sourceControl) resume() error        { return s.c.Resume() }
func (s sourceControl) running() bool        { return s.c.Running() }
func (s sourceControl) isPaused() bool       { return s.c.Paused() }
func (s sourceControl) logTail(n int) string { return s.c.LogTail(n) }
func (s sourceControl) watched() *process    { return nil }
