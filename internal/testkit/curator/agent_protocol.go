package curator

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// Send sends one command without waiting for its reply; read the reply with
// Expect or Next. Use it for commands that block (acquire).
func (a *Agent) Send(t testing.TB, cmd string) {
	t.Helper()
	if strings.TrimSpace(cmd) == "" || strings.ContainsAny(cmd, "\r\n") {
		t.Fatalf("%s: bad command %q: one non-empty line", a.name, cmd)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.note("> " + cmd)
	if _, err := io.WriteString(a.stdin, cmd+"\n"); err != nil {
		t.Fatalf("%s: send %q: %v (%s)\n%s", a.name, cmd, err, a.status(), a.stderr.String())
	}
	a.pending = append(a.pending, cmd)
}

// Next waits, at most within, for the reply to the oldest command sent and
// not yet answered, and returns it. t fails when no command awaits a reply,
// when none comes in time, or when the agent exits.
func (a *Agent) Next(t testing.TB, within time.Duration) string {
	t.Helper()
	a.mu.Lock()
	if len(a.pending) == 0 {
		a.mu.Unlock()
		t.Fatalf("%s: no command awaits a reply", a.name)
	}
	cmd := a.pending[0]
	a.mu.Unlock()
	line, err := a.next(within)
	if err != nil {
		t.Fatalf("%s: no reply to %q: %v\n%s", a.name, cmd, err, a.report())
	}
	a.mu.Lock()
	a.pending = a.pending[1:]
	a.note("< " + line)
	a.mu.Unlock()
	return line
}

// Expect waits, at most within, for the reply to the oldest command sent and
// not yet answered, and fails t unless it is want.
func (a *Agent) Expect(t testing.TB, want string, within time.Duration) {
	t.Helper()
	a.mu.Lock()
	cmd := "(none)"
	if len(a.pending) > 0 {
		cmd = a.pending[0]
	}
	a.mu.Unlock()
	if got := a.Next(t, within); got != want {
		t.Fatalf("%s: reply to %q is %q, want %q\n%s", a.name, cmd, got, want, a.report())
	}
}

// ExpectNoReply waits for within and fails t if a reply (to a command sent
// with Send) arrives meanwhile or the agent exits: e.g. to see that a
// blocking acquire is still waiting. It is a bounded look, not proof.
func (a *Agent) ExpectNoReply(t testing.TB, within time.Duration) {
	t.Helper()
	line, err := a.next(within)
	if errors.Is(err, errNoLine) {
		return
	}
	a.mu.Lock()
	cmd := "(none)"
	if len(a.pending) > 0 {
		cmd = a.pending[0]
	}
	a.mu.Unlock()
	if err != nil {
		t.Fatalf("%s: waiting for no reply to %q: %v\n%s", a.name, cmd, err, a.report())
	}
	t.Fatalf("%s: reply %q to %q, want none yet\n%s", a.name, line, cmd, a.report())
}

// Do sends a command and waits (ReplyTimeout) for its reply. No earlier
// command may still await its reply.
func (a *Agent) Do(t testing.TB, cmd string) string {
	t.Helper()
	a.mu.Lock()
	busy := append([]string(nil), a.pending...)
	a.mu.Unlock()
	if len(busy) > 0 {
		t.Fatalf("%s: Do(%q) while %q still await their replies (Expect them first)", a.name, cmd, busy)
	}
	a.Send(t, cmd)
	return a.Next(t, ReplyTimeout)
}

// DoExpect is Do, failing t unless the reply is want.
func (a *Agent) DoExpect(t testing.TB, cmd, want string) {
	t.Helper()
	if got := a.Do(t, cmd); got != want {
		t.Fatalf("%s: reply to %q is %q, want %q\n%s", a.name, cmd, got, want, a.report())
	}
}

// Participants runs "participants" and returns the node names of the last
// lock made (mutex or rw), in Curator's queue order.
func (a *Agent) Participants(t testing.TB) []string {
	t.Helper()
	return a.List(t, "participants", "participants")
}

// List runs cmd, whose reply is a word (prefix) and a list ("participants
// A B", "nodes X", "participants"), and returns the list's items. t fails
// when the reply does not start with prefix.
func (a *Agent) List(t testing.TB, cmd, prefix string) []string {
	t.Helper()
	line := a.Do(t, cmd)
	rest, ok := strings.CutPrefix(line, prefix)
	if !ok || (rest != "" && rest[0] != ' ') {
		t.Fatalf("%s: reply to %q is %q, want %q and a list\n%s", a.name, cmd, line, prefix, a.report())
	}
	return strings.Fields(rest)
}

// Value runs cmd, whose reply is a word (prefix) and one value ("leader
// ID", "held 2", "leadership true"), and returns the value. t fails when
// the reply is not prefix and one word.
func (a *Agent) Value(t testing.TB, cmd, prefix string) string {
	t.Helper()
	line := a.Do(t, cmd)
	rest, ok := strings.CutPrefix(line, prefix+" ")
	if !ok || rest == "" || strings.ContainsAny(rest, " \t") {
		t.Fatalf("%s: reply to %q is %q, want %q and one value\n%s", a.name, cmd, line, prefix, a.report())
	}
	return rest
}

// Node runs "node" (or "read-node", "write-node": cmd) and returns the path
// of the lock node the agent holds, or "" when it holds none.
func (a *Agent) Node(t testing.TB, cmd string) string {
	t.Helper()
	line := a.Do(t, cmd)
	p, ok := strings.CutPrefix(line, "node ")
	if !ok {
		t.Fatalf("%s: %s: %q", a.name, cmd, line)
	}
	if p == "none" {
		return ""
	}
	return p
}

var errNoLine = errors.New("no reply")

// next returns the next line of the agent's stdout, waiting at most within.
func (a *Agent) next(within time.Duration) (string, error) {
	timer := time.NewTimer(within)
	defer timer.Stop()
	for {
		if s, ok := a.out.pop(); ok {
			return s, nil
		}
		select {
		case <-a.out.notify:
		case <-a.exited:
			// Wait has returned, so all output has been copied.
			if s, ok := a.out.pop(); ok {
				return s, nil
			}
			return "", fmt.Errorf("the agent exited (%s)", a.status())
		case <-timer.C:
			return "", fmt.Errorf("%w within %v", errNoLine, within)
		}
	}
}

// note adds to the transcript; a.mu must be held.
func (a *Agent) note(s string) {
	a.transcript = append(a.transcript, fmt.Sprintf("%8.3fs %s", time.Since(a.started).Seconds(), s))
	if len(a.transcript) > transcriptLen {
		a.transcript = a.transcript[len(a.transcript)-transcriptLen:]
	}
}

// report is the agent's state, transcript and stderr, for failures.
func (a *Agent) report() string {
	a.mu.Lock()
	tr := strings.Join(a.transcript, "\n")
	pending := append([]string(nil), a.pending...)
	a.mu.Unlock()
	return fmt.Sprintf("--- %s (session 0x%x, %s), awaiting replies to %q; commands and replies ---\n%s\n--- its stderr ---\n%s",
		a.name, a.session, a.status(), pending, tr, a.stderr.String())
}

// Contend runs "contend" (the benchmark command): sessions of the agent's
// own take turns at the lock at path until n acquisitions are made, and the
// JVM's timing of them is returned. kind is "mutex" or "semaphore" (max
// leases, one per acquisition; max is ignored for a mutex). It waits at most
// within.
func (a *Agent) Contend(t testing.TB, kind, path string, sessions, n, max int, within time.Duration) time.Duration {
	t.Helper()
	cmd := fmt.Sprintf("contend %s %s %d %d", kind, path, sessions, n)
	if kind == "semaphore" {
		cmd += fmt.Sprintf(" %d", max)
	}
	a.Send(t, cmd)
	line := a.Next(t, within)
	var nanos int64
	if _, err := fmt.Sscanf(line, "done %d", &nanos); err != nil || nanos <= 0 {
		t.Fatalf("%s: reply to %q is %q, want done NANOS\n%s", a.name, cmd, line, a.report())
	}
	return time.Duration(nanos)
}
