package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/znode"
)

// waitLimit bounds every wait in these tests; nothing asserts on durations.
const waitLimit = 60 * time.Second

// pollInterval is how often a bounded wait looks again.
const pollInterval = 10 * time.Millisecond

// proc is one zklock process.
type proc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *lockedBuffer
	stderr *lockedBuffer
	done   chan struct{} // closed once the process was waited for
}

// startZklock starts zklock with args; stdin is a pipe (closeStdin), stdout
// and stderr are kept. t.Cleanup kills it if it is still running.
func startZklock(t *testing.T, args ...string) *proc {
	t.Helper()
	return startZklockEnv(t, nil, args...)
}

// startZklockEnv is startZklock with env ("NAME=VALUE") added to the
// test's environment.
func startZklockEnv(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(zklockBin, args...)
	cmd.Env = append(os.Environ(), env...)
	if raceEnabled {
		cmd.Env = append(cmd.Env, "GORACE=atexit_sleep_ms=0") // not 1s more per run
	}
	cmd.WaitDelay = 5 * time.Second // a leftover grandchild must not hold the pipes open
	p := &proc{cmd: cmd, stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
	var err error
	p.stdin, err = cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("zklock %q\nstdout:\n%s\nstderr:\n%s", args, p.stdout, p.stderr)
		}
	})
	return p
}

// runZklock runs zklock to the end and returns its exit status.
func runZklock(t *testing.T, args ...string) (int, *proc) {
	t.Helper()
	return runZklockEnv(t, nil, args...)
}

// runZklockEnv is runZklock with env added to the test's environment.
func runZklockEnv(t *testing.T, env []string, args ...string) (int, *proc) {
	t.Helper()
	p := startZklockEnv(t, env, args...)
	return p.wait(t), p
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait waits (bounded) for zklock to exit and returns its exit status. A
// data race reported by a -race build fails the test.
func (p *proc) wait(t *testing.T) int {
	t.Helper()
	return p.waitFor(t, "zklock to exit")
}

// waitFor is wait with what is awaited, for the failure message.
func (p *proc) waitFor(t *testing.T, what string) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(waitLimit):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("waited %v for %s; it did not exit; stderr:\n%s", waitLimit, what, p.stderr)
	}
	require.NotContains(t, p.stderr.String(), "DATA RACE")
	ws := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	require.True(t, ws.Exited(), "zklock died: %v; stderr:\n%s", p.cmd.ProcessState, p.stderr)
	return ws.ExitStatus()
}

// waitOutput waits (bounded) until zklock's stdout (or stderr) holds s.
func (p *proc) waitOutput(t *testing.T, buf *lockedBuffer, s string) {
	t.Helper()
	waitUntil(t, fmt.Sprintf("output %q", s), func() (bool, string) {
		if strings.Contains(buf.String(), s) {
			return true, ""
		}
		if p.exited() {
			t.Fatalf("zklock exited (%v) before printing %q\nstdout:\n%s\nstderr:\n%s",
				p.cmd.ProcessState, s, p.stdout, p.stderr)
		}
		return false, buf.String()
	})
}

// closeStdin ends a holder's `read`.
func (p *proc) closeStdin(t *testing.T) {
	t.Helper()
	require.NoError(t, p.stdin.Close())
}

func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(sig))
}

// holdScript prints "ready", holds the lock until stdin is closed, then
// prints "done".
const holdScript = `echo "ready $ZKLOCK_TOKEN"; read x; echo done`

// holdLock starts a zklock that holds path until closeStdin; it returns
// once the command runs.
func holdLock(t *testing.T, servers, path string, flags ...string) *proc {
	t.Helper()
	args := append([]string{"--servers", servers}, flags...)
	p := startZklock(t, append(args, path, "--", "sh", "-c", holdScript)...)
	p.waitOutput(t, p.stdout, "ready")
	return p
}

// waitUntil polls cond (bounded by waitLimit); cond returns whether it is
// met and, if not, what it saw, for the failure message.
func waitUntil(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		ok, saw := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s; last saw: %s", waitLimit, what, saw)
		}
		time.Sleep(pollInterval)
	}
}

// freeOrGone are ls's statuses for a lock no one holds or waits for: 0,
// or exitNoLock once the server removed its path (a container node; the
// harness's servers look every second).
var freeOrGone = []int{exitOK, exitNoLock}

// lockPath is a lock path of the test's own.
func lockPath(t *testing.T) string {
	return "/zklock-test/" + regexp.MustCompile(`[^A-Za-z0-9_-]+`).ReplaceAllString(t.Name(), "_")
}

// zkClient is a session client of the test's, to look at and tamper with
// the lock; closed at cleanup.
func zkClient(t *testing.T, servers string) *session.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	c, err := session.Connect(ctx, strings.Split(servers, ","),
		session.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// participants lists the lock's queue as the library sees it.
func participants(t *testing.T, c *session.Client, path string) []znode.Participant {
	t.Helper()
	m, err := mutex.New(c, path)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	ps, err := m.Participants(ctx)
	require.NoError(t, err)
	return ps
}

// waitParticipants waits (bounded) until the lock has n nodes.
func waitParticipants(t *testing.T, c *session.Client, path string, n int) []znode.Participant {
	t.Helper()
	var ps []znode.Participant
	waitUntil(t, "participants of "+path, func() (bool, string) {
		ps = participants(t, c, path)
		return len(ps) == n, describe(ps)
	})
	return ps
}

func describe(ps []znode.Participant) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.Name + "=" + string(p.Data) + " ")
	}
	return "[" + b.String() + "]"
}

// lockedBuffer is a bytes.Buffer safe for the process's writers and the
// test's readers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitGroupGone waits (bounded) until no live (non-zombie) process is left
// in process group pgid: the signals sent to it take effect.
func waitGroupGone(t *testing.T, pgid int) {
	t.Helper()
	waitUntil(t, fmt.Sprintf("process group %d to be gone", pgid), func() (bool, string) {
		err := syscall.Kill(-pgid, 0)
		return errors.Is(err, syscall.ESRCH) || !groupAlive(pgid), "live processes in it"
	})
}
