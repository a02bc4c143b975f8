package harness

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// stopGrace is how long a SIGTERM may take before the group is SIGKILLed.
const stopGrace = 15 * time.Second

// killWait bounds the wait for a SIGKILLed process group leader to be reaped.
const killWait = 10 * time.Second

// process is one server process started in its own process group, with stdout
// and stderr appended to logPath. It can be started again after it exited.
type process struct {
	name    string   // for messages, e.g. "zookeeper member 2"
	argv    []string // argv[0] is the program
	env     []string // extra environment, appended to os.Environ()
	dir     string   // working directory
	logPath string   // stdout and stderr of every run, appended
	// extraLogs are further log files the program writes itself; their tails
	// are shown with logPath's.
	extraLogs []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{} // closed when the current run has been reaped
	err    error         // the Wait error of the last run, valid after done
	paused bool
}

// start launches the process. It is an error to start a running process.
func (p *process) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && !isClosed(p.done) {
		return fmt.Errorf("%s is already running (pid %d)", p.name, p.cmd.Process.Pid)
	}
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close() // the child has its own copy of the descriptor
	fmt.Fprintf(logf, "=== %s: starting %s\n", time.Now().Format(time.RFC3339Nano), strings.Join(p.argv, " "))
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Dir = p.dir
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdin = nil
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	done := make(chan struct{})
	p.cmd, p.done, p.err, p.paused = cmd, done, nil, false
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(done)
	}()
	return nil
}

// running reports whether the process has been started and not yet reaped.
func (p *process) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil && !isClosed(p.done)
}

// isPaused reports whether the process is running but stopped with SIGSTOP.
func (p *process) isPaused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paused && p.cmd != nil && !isClosed(p.done)
}

// exited returns a channel closed when the current run ends (closed already
// when never started).
func (p *process) exited() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	return p.done
}

// signal sends sig to the whole process group.
func (p *process) signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || isClosed(p.done) {
		return fmt.Errorf("%s is not running", p.name)
	}
	if err := syscall.Kill(-p.cmd.Process.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal %v to %s: %w", sig, p.name, err)
	}
	switch sig {
	case syscall.SIGSTOP:
		p.paused = true
		// kill returns before every thread has stopped: a JVM may still
		// answer for a moment. Wait (bounded) until each has.
		waitStopped(p.cmd.Process.Pid, stopSettle)
	case syscall.SIGCONT:
		p.paused = false
	}
	return nil
}

// stopSettle bounds the wait for a SIGSTOPped process's threads to stop.
const stopSettle = 2 * time.Second

// waitStopped waits until every thread of process pid is stopped (state T
// in /proc/pid/task/*/stat), for at most limit; where /proc cannot say, it
// returns at once.
func waitStopped(pid int, limit time.Duration) {
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
		if err != nil || len(tasks) == 0 {
			return
		}
		stopped := true
		for _, task := range tasks {
			b, err := os.ReadFile(task)
			if err != nil {
				continue // the thread exited
			}
			// pid (comm) state ...: comm may hold spaces and parentheses.
			if i := bytes.LastIndexByte(b, ')'); i < 0 || i+2 >= len(b) || (b[i+2] != 'T' && b[i+2] != 't') {
				stopped = false
				break
			}
		}
		if stopped {
			return
		}
	}
}

// stop sends SIGTERM (and SIGCONT, in case it is paused), waits up to grace
// for the exit, then SIGKILLs the group. Stopping a stopped process is a no-op.
func (p *process) stop(grace time.Duration) error { return p.stopWith(syscall.SIGTERM, grace) }

// stopWith is stop with sig instead of SIGTERM.
func (p *process) stopWith(sig syscall.Signal, grace time.Duration) error {
	if !p.running() {
		return nil
	}
	_ = p.signal(sig)
	_ = p.signal(syscall.SIGCONT)
	select {
	case <-p.exited():
		p.killGroup() // children the leader left behind
		return nil
	case <-time.After(grace):
	}
	return p.kill()
}

// kill SIGKILLs the process group and waits (bounded) until it is reaped.
func (p *process) kill() error {
	if !p.running() {
		return nil
	}
	p.killGroup()
	select {
	case <-p.exited():
		return nil
	case <-time.After(killWait):
		return fmt.Errorf("%s did not exit within %v of SIGKILL", p.name, killWait)
	}
}

// killGroup SIGKILLs the last run's process group, ignoring errors.
func (p *process) killGroup() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
}

// exitStatus describes how the last run ended, for messages.
func (p *process) exitStatus() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.cmd == nil:
		return "never started"
	case !isClosed(p.done):
		return "running"
	case p.err == nil:
		return "exited with status 0"
	default:
		return p.err.Error()
	}
}

// logTail returns the last n lines of the process log and of each extra log.
func (p *process) logTail(n int) string {
	out := fileTail(p.logPath, n)
	for _, l := range p.extraLogs {
		if isFile(l) {
			out += "\n" + fileTail(l, n)
		}
	}
	return out
}

// fileTail returns the last n lines of a file (at most the last 64 KiB), or a
// note saying why it could not be read.
func fileTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	const max = 64 << 10
	if st, err := f.Stat(); err == nil && st.Size() > max {
		_, _ = f.Seek(st.Size()-max, io.SeekStart)
	}
	data, _ := io.ReadAll(f)
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return fmt.Sprintf("--- last lines of %s ---\n%s", filepath.Base(path), bytes.Join(lines, []byte("\n")))
}

// isClosed reports whether c is closed; a nil channel counts as open.
func isClosed(c chan struct{}) bool {
	if c == nil {
		return false
	}
	select {
	case <-c:
		return true
	default:
		return false
	}
}
