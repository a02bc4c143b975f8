package curator

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/integration"
)

// Bounds of the waits on an agent.
const (
	// DefaultSessionTimeout is the ZooKeeper session timeout an agent asks
	// for unless WithSessionTimeout says otherwise.
	DefaultSessionTimeout = 10 * time.Second
	// ReplyTimeout bounds Do's wait for a reply.
	ReplyTimeout = 60 * time.Second
	// startTimeout bounds the JVM start and the connection (the agent itself
	// gives up connecting after 30s).
	startTimeout = 90 * time.Second
	// quitGrace is how long the agent may take to close its session and exit
	// at the end of its stdin before its process group is SIGKILLed.
	quitGrace = 10 * time.Second
	// killWait bounds the wait for a SIGKILLed JVM to be reaped.
	killWait = 10 * time.Second
	// transcriptLen is how many commands and replies are kept for the log.
	transcriptLen = 200
	// stderrTail is how much of the agent's stderr is kept for the log.
	stderrTail = 32 << 10
)

// Option configures Start.
type Option func(*config)

type config struct {
	sessionTimeout time.Duration
	name           string
}

// WithSessionTimeout sets the ZooKeeper session timeout the agent's
// CuratorFramework asks for (the server may negotiate it). Default
// DefaultSessionTimeout.
func WithSessionTimeout(d time.Duration) Option { return func(c *config) { c.sessionTimeout = d } }

// WithName names the agent in messages. Default "curator agent N".
func WithName(name string) Option { return func(c *config) { c.name = name } }

var agentCount atomic.Int64

// Agent is one running CuratorLock JVM with its own ZooKeeper session. Its
// methods take the test's testing.TB and end the test with t.Fatal on a
// failure, so they must be called from the test's goroutine.
type Agent struct {
	name    string
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	started time.Time
	session int64

	out    *lineQueue
	stderr *tailBuffer
	exited chan struct{} // closed when the JVM has been reaped
	wait   error         // cmd.Wait's error, valid once exited is closed

	mu         sync.Mutex
	pending    []string // commands sent whose reply has not been read, in order
	transcript []string
}

// Start compiles the agent (once per process), starts a JVM running it
// against the ZooKeeper servers (host:port) and waits until its
// CuratorFramework is connected. The JVM is stopped at t's cleanup. When
// Available fails, t is ended by integration.Unavailable.
func Start(t testing.TB, servers []string, opts ...Option) *Agent {
	t.Helper()
	if err := Available(); err != nil {
		integration.Unavailable(t, "%v; %s", err, Hint)
	}
	if len(servers) == 0 {
		t.Fatal("curator.Start: no servers")
	}
	cfg := config{sessionTimeout: DefaultSessionTimeout}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.name == "" {
		cfg.name = fmt.Sprintf("curator agent %d", agentCount.Add(1))
	}
	tc, dir, err := build()
	if err != nil {
		t.Fatalf("%s: %v", cfg.name, err)
	}

	cp := append([]string{dir}, tc.classpath...)
	argv := []string{
		"-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
		"-Djava.net.preferIPv4Stack=true",
		"-Dzookeeper.sasl.client=false",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		"-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
		"-cp", strings.Join(cp, string(os.PathListSeparator)),
		mainClass,
		strings.Join(servers, ","),
		strconv.FormatInt(cfg.sessionTimeout.Milliseconds(), 10),
	}
	a := &Agent{
		name:   cfg.name,
		out:    newLineQueue(),
		stderr: &tailBuffer{max: stderrTail},
		exited: make(chan struct{}),
	}
	a.cmd = exec.Command(tc.java, argv...)
	a.cmd.Dir = filepath.Dir(dir)
	a.cmd.Stdout = a.out
	a.cmd.Stderr = a.stderr
	a.cmd.WaitDelay = 5 * time.Second // in case something inherited the pipes
	a.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if a.stdin, err = a.cmd.StdinPipe(); err != nil {
		t.Fatalf("%s: %v", a.name, err)
	}
	a.started = time.Now()
	if err := a.cmd.Start(); err != nil {
		t.Fatalf("%s: start %s: %v", a.name, tc.java, err)
	}
	go func() {
		a.wait = a.cmd.Wait()
		close(a.exited)
	}()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s", a.report())
		}
		if err := a.stop(); err != nil {
			t.Errorf("%s: %v", a.name, err)
		}
	})

	a.mu.Lock()
	a.pending = append(a.pending, "(start)")
	a.mu.Unlock()
	line := a.Next(t, startTimeout)
	hexID, ok := strings.CutPrefix(line, "ready ")
	id, perr := strconv.ParseUint(hexID, 16, 64)
	if !ok || perr != nil {
		t.Fatalf("%s did not start: %q\n%s", a.name, line, a.stderr.String())
	}
	a.session = int64(id)
	return a
}

// Name is the agent's name in messages.
func (a *Agent) Name() string { return a.name }

// Session is the id of the agent's ZooKeeper session when it started (the
// ephemeral owner of its lock nodes).
func (a *Agent) Session() int64 { return a.session }

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
	line := a.Do(t, "participants")
	rest, ok := strings.CutPrefix(line, "participants")
	if !ok {
		t.Fatalf("%s: participants: %q", a.name, line)
	}
	return strings.Fields(rest)
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

// Exited is closed once the JVM has exited and been reaped.
func (a *Agent) Exited() <-chan struct{} { return a.exited }

// Kill SIGKILLs the JVM's process group, as a crash: its ZooKeeper session,
// and the ephemeral lock nodes of it, stay on the server until the session
// expires. It waits (bounded) until the JVM is reaped.
func (a *Agent) Kill() {
	a.killGroup()
	select {
	case <-a.exited:
	case <-time.After(killWait):
	}
}

// stop ends the agent at cleanup: end of stdin (the agent closes its session
// and exits), then SIGKILL to the group, and waits until it is reaped.
func (a *Agent) stop() error {
	_ = a.stdin.Close()
	select {
	case <-a.exited:
	case <-time.After(quitGrace):
	}
	a.killGroup() // also anything the JVM left in its group
	select {
	case <-a.exited:
		return nil
	case <-time.After(killWait):
		return fmt.Errorf("did not exit within %v of SIGKILL", killWait)
	}
}

func (a *Agent) killGroup() {
	if a.cmd.Process != nil {
		_ = syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL)
	}
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

// status describes the JVM's state, for messages.
func (a *Agent) status() string {
	select {
	case <-a.exited:
		if a.wait == nil {
			return "exited with status 0"
		}
		return a.wait.Error()
	default:
		return "running"
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

// lineQueue is an io.Writer that splits what is written into lines and
// queues them, without ever blocking the writer.
type lineQueue struct {
	mu      sync.Mutex
	partial []byte
	lines   []string
	notify  chan struct{} // a token after each Write that completed a line
}

func newLineQueue() *lineQueue { return &lineQueue{notify: make(chan struct{}, 1)} }

func (q *lineQueue) Write(p []byte) (int, error) {
	q.mu.Lock()
	q.partial = append(q.partial, p...)
	n := 0
	for {
		i := bytes.IndexByte(q.partial, '\n')
		if i < 0 {
			break
		}
		q.lines = append(q.lines, strings.TrimSuffix(string(q.partial[:i]), "\r"))
		q.partial = q.partial[i+1:]
		n++
	}
	q.mu.Unlock()
	if n > 0 {
		select {
		case q.notify <- struct{}{}:
		default:
		}
	}
	return len(p), nil
}

func (q *lineQueue) pop() (string, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.lines) == 0 {
		return "", false
	}
	s := q.lines[0]
	q.lines = q.lines[1:]
	return s, true
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.buf) == 0 {
		return "(nothing)"
	}
	return string(b.buf)
}
