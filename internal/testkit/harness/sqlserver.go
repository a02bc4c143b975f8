package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Database is the database that StartPostgres and StartMariaDB create for
// tests, and the one their DSNs (and PgBouncer's) name.
const Database = "zkr"

// Bounds and pace of the SQL servers' waits.
const (
	// sqlStartTimeout bounds the wait for a started database server or
	// pooler to answer its client tool (crash recovery included).
	sqlStartTimeout = 30 * time.Second
	// sqlProbeInterval is how often that wait asks: the servers answer in
	// about 0.1s, so a coarser pace would be most of the start time.
	sqlProbeInterval = 20 * time.Millisecond
	// toolTimeout bounds one run of a client tool or of a data directory's
	// initialisation (initdb, mariadb-install-db: about 1s each).
	toolTimeout = 60 * time.Second
)

// Where the SQL servers' programs are looked for: variables so that tests of
// the harness can pretend nothing is installed.
var (
	// postgresBinGlob matches Debian's per-major-version directories.
	postgresBinGlob = "/usr/lib/postgresql/*/bin"
	// findSQLBinary finds a program on PATH or in the usual directories.
	findSQLBinary = findBinary
)

// How to get each SQL server, quoted by Unavailable's callers.
const (
	postgresHint  = "install it (Debian/Ubuntu: apt-get install postgresql)"
	mariadbHint   = "install it (Debian/Ubuntu: apt-get install mariadb-server)"
	pgbouncerHint = "install it (Debian/Ubuntu: apt-get install pgbouncer)"
)

// dbServer is the process of a database server or pooler of a test
// (PostgreSQL, MariaDB, PgBouncer): a fixed Loopback port, a temp dir of its
// own, data kept across stop and start.
type dbServer struct {
	addr  string
	root  string       // temp dir, removed by close
	proc  *process     // nil until the data dir is ready
	ready func() error // returns nil when the server answers
	// stopSig asks for a shutdown that does not wait for clients to leave
	// (PostgreSQL's SIGTERM would wait for them).
	stopSig syscall.Signal
	// forks is true for a server whose children run in sessions of their
	// own (PostgreSQL's backends): a signal to the process group misses
	// them, so kill, pause and resume signal each child too.
	forks bool
}

// start starts the process and waits (bounded) until ready answers.
func (s *dbServer) start() error {
	if err := s.proc.start(); err != nil {
		return err
	}
	return waitFor(s.proc, s.proc.name+" answering", sqlStartTimeout, sqlProbeInterval, s.ready)
}

// stop resumes a paused server, sends stopSig, waits up to stopGrace for the
// exit, then kills. Stopping a stopped server does nothing.
func (s *dbServer) stop() error {
	if !s.proc.running() {
		return nil
	}
	if s.proc.isPaused() {
		_ = s.resume() // a stopped process would hold stopSig pending
	}
	_ = s.proc.signal(s.stopSig)
	select {
	case <-s.proc.exited():
		s.proc.killGroup() // children the leader left behind
		return nil
	case <-time.After(stopGrace):
	}
	return s.kill()
}

// kill SIGKILLs the server, and every child of a forking server, and waits
// (bounded) until they are gone.
func (s *dbServer) kill() error {
	if !s.forks {
		return s.proc.kill()
	}
	if !s.proc.running() {
		return nil
	}
	// Stopped first, the leader forks no new child while its children are
	// listed and killed.
	_ = s.proc.signal(syscall.SIGSTOP)
	kids := childPIDs(s.pid())
	signalPIDs(kids, syscall.SIGKILL)
	return errors.Join(s.proc.kill(), waitGone(kids, killWait))
}

// pause freezes the server with SIGSTOP, the leader first so that it forks no
// child meanwhile, and waits (bounded) until the kernel has stopped them all:
// a signal is delivered after kill(2) returns.
func (s *dbServer) pause() error {
	if err := s.proc.signal(syscall.SIGSTOP); err != nil {
		return err
	}
	procs := []int{s.pid()}
	if s.forks {
		kids := childPIDs(procs[0])
		signalPIDs(kids, syscall.SIGSTOP)
		procs = append(procs, kids...)
	}
	return waitFor(nil, s.proc.name+" stopped", killWait, time.Millisecond, func() error {
		for _, pid := range procs {
			if _, state, ok := procStat(pid); ok && state != 'T' && state != 't' && !isDead(state) {
				return fmt.Errorf("pid %d is in state %c", pid, state)
			}
		}
		return nil
	})
}

// resume continues a paused server with SIGCONT, its children first.
func (s *dbServer) resume() error {
	if s.forks && s.proc.running() {
		signalPIDs(childPIDs(s.pid()), syscall.SIGCONT)
	}
	return s.proc.signal(syscall.SIGCONT)
}

// close kills the server (its data goes with the dir, so a clean shutdown
// buys nothing) and removes its temp dir.
func (s *dbServer) close() error {
	var err error
	if s.proc != nil {
		err = s.kill()
	}
	return errors.Join(err, os.RemoveAll(s.root))
}

// pid is the process id of the server's current run (0 when never started).
func (s *dbServer) pid() int {
	s.proc.mu.Lock()
	defer s.proc.mu.Unlock()
	if s.proc.cmd == nil {
		return 0
	}
	return s.proc.cmd.Process.Pid
}

// cleanup registers t.Cleanup to show the end of the server's log when t
// failed, and to close it.
func (s *dbServer) cleanup(t testing.TB, kind string) {
	t.Cleanup(func() {
		if t.Failed() && s.proc != nil {
			t.Logf("%s", s.proc.logTail(20))
		}
		if err := s.close(); err != nil {
			t.Errorf("stop %s: %v", kind, err)
		}
	})
}

// fatalIf ends t with a failure when err is not nil.
func fatalIf(t testing.TB, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// addrInUse reports whether a server's start failed because another process
// took its port between FreePorts and the bind (the error quotes the log).
func addrInUse(err error) bool {
	return err != nil && strings.Contains(err.Error(), "Address already in use")
}

// splitHostPort splits "host:port" (an address of this harness).
func splitHostPort(addr string) (host, port string) {
	host, port, _ = net.SplitHostPort(addr)
	return host, port
}

// trimNewline drops the line ends at the end of a client tool's output.
func trimNewline(out string) string { return strings.TrimRight(out, "\n") }

// account is the unprivileged user that runs a server which refuses root
// (PostgreSQL and PgBouncer).
type account struct {
	name     string
	uid, gid uint32
}

// serverAccount is the account to run PostgreSQL and PgBouncer as: nil when
// this process is not root (they run as its user), else the postgres account
// that Debian's postgresql package creates. The error wraps ErrUnavailable.
func serverAccount() (*account, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, unavailablef("running as root, and no postgres account to run the server as (it refuses root): %v", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("account postgres: %w", err)
	}
	return &account{name: u.Username, uid: uint32(uid), gid: uint32(gid)}, nil
}

// command returns argv run as a: unchanged for nil, else under setpriv,
// which drops to a's ids and (as the kernel clears the parent-death signal
// on that change) sets SIGKILL on the parent's death again.
func (a *account) command(argv []string) ([]string, error) {
	if a == nil {
		return argv, nil
	}
	setpriv, err := findBinary("setpriv")
	if err != nil {
		return nil, fmt.Errorf("%w (util-linux), needed to run %s as %s", err, argv[0], a.name)
	}
	return append([]string{setpriv,
		"--reuid=" + fmt.Sprint(a.uid), "--regid=" + fmt.Sprint(a.gid), "--clear-groups",
		"--pdeathsig=KILL", "--"}, argv...), nil
}

// chown gives paths to a; nothing for nil.
func (a *account) chown(paths ...string) error {
	if a == nil {
		return nil
	}
	for _, p := range paths {
		if err := os.Chown(p, int(a.uid), int(a.gid)); err != nil {
			return err
		}
	}
	return nil
}

// runTool runs argv to its end as a (nil: this process's user) in dir,
// bounded by toolTimeout, and returns its stdout. The error quotes its output.
func runTool(a *account, dir string, argv ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), toolTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if a != nil {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: a.uid, Gid: a.gid}
	}
	// The whole group: initdb's and mariadb-install-db's children too.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		out := strings.TrimSpace(stderr.String() + "\n" + stdout.String())
		if len(out) > 4096 {
			out = "..." + out[len(out)-4096:]
		}
		return stdout.String(), fmt.Errorf("%s: %w\n%s", strings.Join(argv, " "), err, out)
	}
	return stdout.String(), nil
}

// childPIDs lists the live children of pid, from /proc.
func childPIDs(pid int) []int {
	if pid <= 0 {
		return nil
	}
	entries, _ := os.ReadDir("/proc")
	var kids []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, state, ok := procStat(child); ok && ppid == pid && !isDead(state) {
			kids = append(kids, child)
		}
	}
	return kids
}

// procStat reads the parent and the state of pid from /proc/pid/stat; ok is
// false when there is no such process.
func procStat(pid int) (ppid int, state byte, ok bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, false
	}
	// "pid (comm) state ppid ...": comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 2 || len(f[0]) != 1 {
		return 0, 0, false
	}
	ppid, err = strconv.Atoi(f[1])
	return ppid, f[0][0], err == nil
}

// isDead reports whether a process in state has exited (a zombie holds no
// files, ports or shared memory).
func isDead(state byte) bool { return state == 'Z' || state == 'X' }

// signalPIDs sends sig to each of pids, ignoring those already gone.
func signalPIDs(pids []int, sig syscall.Signal) {
	for _, pid := range pids {
		_ = syscall.Kill(pid, sig)
	}
}

// waitGone waits until none of pids is alive, or timeout.
func waitGone(pids []int, timeout time.Duration) error {
	return waitFor(nil, "killed processes gone", timeout, 10*time.Millisecond, func() error {
		for _, pid := range pids {
			if _, state, ok := procStat(pid); ok && !isDead(state) {
				return fmt.Errorf("pid %d is still there (state %c)", pid, state)
			}
		}
		return nil
	})
}
