package curator

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
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
	digest         string // "user:password", or none
}

// WithSessionTimeout sets the ZooKeeper session timeout the agent's
// CuratorFramework asks for (the server may negotiate it). Default
// DefaultSessionTimeout.
func WithSessionTimeout(d time.Duration) Option { return func(c *config) { c.sessionTimeout = d } }

// WithName names the agent in messages. Default "curator agent N".
func WithName(name string) Option { return func(c *config) { c.name = name } }

// digestEnv passes WithDigestAuth's credentials to the agent: an
// environment variable, not the command line, which every local user can
// read (ps).
const digestEnv = "CURATOR_AGENT_DIGEST"

// WithDigestAuth makes the agent's CuratorFrameworks authenticate with
// ZooKeeper's digest scheme as user:password (Curator's
// builder().authorization) and create every node, parents included, with
// the creator-only ACL (an ACLProvider of ZooDefs.Ids.CREATOR_ALL_ACL): as
// a Go client with session.WithDigestAuth(user, password) and
// session.WithACL(session.AuthACL(session.PermAll)). Default: no credentials, and
// nodes open to all.
func WithDigestAuth(user, password string) Option {
	return func(c *config) { c.digest = user + ":" + password }
}

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
// Available fails, t is ended by harness.Unavailable.
func Start(t testing.TB, servers []string, opts ...Option) *Agent {
	t.Helper()
	if err := Available(); err != nil {
		harness.Unavailable(t, "%v; %s", err, Hint)
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
	// C1 only starts fast and runs slower: for tests. Benchmarks
	// (harness.BenchJVMEnv) run Curator as a production JVM would.
	jit := "-XX:TieredStopAtLevel=1"
	if os.Getenv(harness.BenchJVMEnv) != "" {
		jit = "-XX:+TieredCompilation"
	}
	// SoftRefLRUPolicyMSPerMB=0: every collection clears the soft
	// references (the JDK's reflection and method-handle caches). Else
	// they are cleared as they age, hundreds of KB at a time, and the
	// cache benchmarks' heap readings (each after System.gc()) dropped
	// by as much between two of them: a fresh JVM's 13-node cache
	// "retained" -660 KB.
	argv := []string{
		"-Xmx128m", "-XX:+UseSerialGC", jit, "-XX:-UsePerfData", "-XX:SoftRefLRUPolicyMSPerMB=0",
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
	a.cmd.Env = agentEnv(cfg.digest)
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

// agentEnv is the agent's environment: this process's, with digest
// ("user:password") as the agent's credentials, or none at all when digest
// is empty (whatever this process's environment says).
func agentEnv(digest string) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, digestEnv+"=") })
	if digest != "" {
		env = append(env, digestEnv+"="+digest)
	}
	return env
}

// Name is the agent's name in messages.
func (a *Agent) Name() string { return a.name }

// Session is the id of the agent's ZooKeeper session when it started (the
// ephemeral owner of its lock nodes).
func (a *Agent) Session() int64 { return a.session }

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
