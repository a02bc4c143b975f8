package harness

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// serverStartTimeout bounds the wait for redis or memcached to answer.
const serverStartTimeout = 20 * time.Second

// Server is one redis or memcached server of a test: a local process on a
// Loopback port, or an external address. Redis and Memcached are Servers.
type Server struct{ s *localServer }

// Addr is the server's address, "127.0.0.1:port" for local ones; it stays the
// same across Stop and Start.
func (x Server) Addr() string { return x.s.addr }

// External reports whether the server comes from the kind's *_ADDRS
// variable; then Stop, Start and Kill skip the test, or fail it when
// Required.
func (x Server) External() bool { return x.s.proc == nil }

// Stop shuts the server down (SIGTERM; SIGKILL when it does not exit in
// time). Its data is lost: there is no persistence.
func (x Server) Stop(t testing.TB) { t.Helper(); x.s.stop(t) }

// Start starts a stopped or killed server again on the same port, empty, and
// waits (bounded) until it answers its probe (redis: PING; memcached:
// version).
func (x Server) Start(t testing.TB) { t.Helper(); x.s.start(t) }

// Kill kills the server with SIGKILL and reaps it.
func (x Server) Kill(t testing.TB) { t.Helper(); x.s.kill(t) }

// wrapServers gives each started server its kind's type.
func wrapServers[T any](servers []*localServer, wrap func(Server) *T) []*T {
	out := make([]*T, len(servers))
	for i, s := range servers {
		out[i] = wrap(Server{s})
	}
	return out
}

// lineProbe returns a probe that sends cmd and accepts the one-line reply
// when ok says so.
func lineProbe(cmd string, ok func(reply string) bool) func(addr string) error {
	return func(addr string) error {
		reply, err := exchange(addr, cmd, 2*time.Second, func(r string) bool {
			return strings.HasSuffix(r, "\r\n")
		})
		if err != nil {
			return err
		}
		if !ok(reply) {
			return fmt.Errorf("%q to %s: %q", strings.TrimSpace(cmd), addr, reply)
		}
		return nil
	}
}

// localServer is one single-process server (redis, memcached) on a fixed
// Loopback port with its own temp dir, or an external address.
type localServer struct {
	kind  string             // "redis", "memcached"
	addr  string             // host:port
	proc  *process           // nil when external
	env   string             // when external, the variable it came from ("REDIS_ADDRS")
	probe func(string) error // returns nil when the server answers
}

// findBinary returns the path of name from PATH or /usr/bin, /usr/sbin, or
// an error wrapping ErrUnavailable.
func findBinary(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/bin", "/usr/sbin", "/usr/local/bin"} {
		if p := filepath.Join(dir, name); isFile(p) {
			return p, nil
		}
	}
	return "", unavailablef("no %s installed", name)
}

// startServers gives t n servers of a kind: the first n addresses of envVar
// when it is set, or n local processes of binary with the command line
// argv(binary path, port, temp dir). hint says how to get the server.
func startServers(t testing.TB, n int, kind, envVar, binary, hint string,
	argv func(bin string, port int, dir string) []string, probe func(string) error) []*localServer {
	t.Helper()
	if s := os.Getenv(envVar); s != "" {
		addrs := splitAddrs(s)
		if len(addrs) < n {
			Unavailable(t, "%s: %s lists %d servers, the test needs %d", kind, envVar, len(addrs), n)
		}
		out := make([]*localServer, n)
		for i := range out {
			out[i] = &localServer{kind: kind, addr: addrs[i], env: envVar, probe: probe}
		}
		return out
	}
	bin, err := findBinary(binary)
	if err != nil {
		Unavailable(t, "%s: %v; %s", kind, err, hint)
	}
	ports, err := FreePorts(n)
	if err != nil {
		t.Fatalf("%s: %v", kind, err)
	}
	out := make([]*localServer, 0, n)
	for i := 0; i < n; i++ {
		root, err := os.MkdirTemp("", "zkr-"+kind+"-")
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		s := &localServer{kind: kind, addr: hostPort(ports[i]), probe: probe}
		s.proc = &process{
			name:    fmt.Sprintf("%s on %s", kind, s.addr),
			argv:    argv(bin, ports[i], root),
			dir:     root,
			logPath: filepath.Join(root, kind+".log"),
		}
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("%s", s.proc.logTail(20))
			}
			// SIGKILL: nothing is persisted, so a graceful stop buys nothing.
			if err := errors.Join(s.proc.kill(), os.RemoveAll(root)); err != nil {
				t.Errorf("stop %s: %v", s.proc.name, err)
			}
		})
		out = append(out, s)
		s.start(t)
	}
	return out
}

// start starts the process and waits until the probe answers.
func (s *localServer) start(t testing.TB) {
	t.Helper()
	s.local(t, "start")
	if err := s.proc.start(); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(s.proc, s.proc.name+" answering", serverStartTimeout, 50*time.Millisecond,
		func() error { return s.probe(s.addr) }); err != nil {
		t.Fatal(err)
	}
}

// stop stops the process: SIGTERM, bounded wait, SIGKILL.
func (s *localServer) stop(t testing.TB) {
	t.Helper()
	s.local(t, "stop")
	if err := s.proc.stop(stopGrace); err != nil {
		t.Fatal(err)
	}
}

// stopWith stops the process as stop does, with sig instead of SIGTERM.
func (s *localServer) stopWith(t testing.TB, sig syscall.Signal) {
	t.Helper()
	s.local(t, "stop")
	if err := s.proc.stopWith(sig, stopGrace); err != nil {
		t.Fatal(err)
	}
}

// kill SIGKILLs the process and reaps it.
func (s *localServer) kill(t testing.TB) {
	t.Helper()
	s.local(t, "kill")
	if err := s.proc.kill(); err != nil {
		t.Fatal(err)
	}
}

// local ends t when the server is external and cannot be controlled:
// skipped, or failed when Required (Unavailable).
func (s *localServer) local(t testing.TB, what string) {
	t.Helper()
	if s.proc == nil {
		Unavailable(t, "cannot %s %s at %s: it comes from %s; control needs servers this harness starts", what, s.kind, s.addr, s.env)
	}
}
