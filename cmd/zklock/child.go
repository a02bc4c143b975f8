package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// stopSettle bounds how long zklock waits to be stopped after it stopped
// its own process group to follow COMMAND's stop.
const stopSettle = time.Second

// command is COMMAND, looked up before the lock is taken so that a typo
// does not wait for the lock first.
type command struct {
	argv []string
	path string // the executable
}

// resolveCommand looks argv[0] up in $PATH (unless it names a file) as a
// shell does. On failure it returns the shell's status for it (127, 126) and
// a message.
func resolveCommand(argv []string) (*command, int, string) {
	p, err := exec.LookPath(argv[0])
	if errors.Is(err, exec.ErrDot) {
		err = nil // found through a relative $PATH entry: a shell runs it too
	}
	if err != nil {
		code, msg := startFailure(argv[0], err)
		return nil, code, msg
	}
	return &command{argv: argv, path: p}, exitOK, ""
}

// startFailure maps an error looking up or starting COMMAND to the status
// and message a shell gives.
func startFailure(name string, err error) (int, string) {
	switch {
	case errors.Is(err, exec.ErrNotFound):
		return exitNotFound, name + ": command not found"
	case errors.Is(err, fs.ErrNotExist):
		return exitNotFound, name + ": no such file or directory"
	case errors.Is(err, fs.ErrPermission):
		return exitCannotExec, name + ": permission denied"
	case errors.Is(err, syscall.EISDIR):
		return exitCannotExec, name + ": is a directory"
	case errors.Is(err, syscall.ENOEXEC):
		return exitCannotExec, name + ": cannot execute: exec format error"
	default:
		return exitCannotExec, fmt.Sprintf("%s: cannot execute: %v", name, err)
	}
}

// child is COMMAND running in its own process group.
type child struct {
	pid  int       // COMMAND's pid, also its process group id
	tty  *terminal // non-nil when its group was given the terminal
	exit chan exitResult
}

// exitResult is how COMMAND ended.
type exitResult struct {
	code int   // its exit status, 128+N for signal N
	err  error // waiting for it failed (code is then meaningless)
}

// startChild starts c with env in a new process group. If zklock has the
// terminal tty (nil: none), the group is put in its foreground (falling back
// to the background if the terminal refuses). COMMAND gets SIGTERM if zklock
// dies.
func startChild(c *command, env []string, tty *terminal) (*child, error) {
	start := func(fg bool) (*exec.Cmd, error) {
		cmd := &exec.Cmd{
			Path:   c.path,
			Args:   c.argv,
			Env:    env,
			Stdin:  os.Stdin,
			Stdout: os.Stdout,
			Stderr: os.Stderr,
			SysProcAttr: &syscall.SysProcAttr{
				Setpgid:   true,
				Pdeathsig: syscall.SIGTERM,
			},
		}
		if fg {
			cmd.SysProcAttr.Foreground = true
			cmd.SysProcAttr.Ctty = tty.fd
		}
		return cmd, cmd.Start()
	}
	fg := tty != nil && tty.ours()
	cmd, err := start(fg)
	if err != nil && fg {
		cmd, err = start(false)
	}
	if err != nil {
		return nil, err
	}
	ch := &child{pid: cmd.Process.Pid, tty: tty, exit: make(chan exitResult, 1)}
	go ch.wait(cmd.Process)
	return ch, nil
}

// wait reaps COMMAND and sends how it ended on c.exit. With a controlling
// terminal it also does job control: when COMMAND is stopped (Ctrl-Z, or
// SIGTTIN for reading the terminal from the background), zklock takes the
// terminal back and stops its own process group with the same signal, so
// that the shell sees the job stopped; when continued, it gives COMMAND the
// terminal if zklock has it, and continues COMMAND's group.
func (c *child) wait(p *os.Process) {
	defer p.Release()
	flags := 0
	if c.tty != nil {
		flags = syscall.WUNTRACED
	}
	for {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(c.pid, &ws, flags, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			c.exit <- exitResult{err: fmt.Errorf("waiting for COMMAND (pid %d): %w", c.pid, err)}
			return
		}
		switch {
		case ws.Stopped():
			c.suspend(ws.StopSignal())
		case ws.Exited() || ws.Signaled():
			if c.tty != nil {
				c.tty.takeBack(c.pid)
			}
			c.exit <- exitResult{code: waitStatusCode(ws)}
			return
		}
	}
}

// suspend follows COMMAND's stop by sig (with a controlling terminal only).
func (c *child) suspend(sig syscall.Signal) {
	c.tty.takeBack(c.pid)
	if sig != syscall.SIGTSTP && sig != syscall.SIGTTIN && sig != syscall.SIGTTOU {
		sig = syscall.SIGSTOP
	}
	cont := make(chan os.Signal, 1)
	signal.Notify(cont, syscall.SIGCONT)
	defer signal.Stop(cont)
	// zklock does not catch sig, so it stops with its group; a process of
	// the group that catches it (a shell running zklock) handles it.
	_ = syscall.Kill(-c.tty.pgrp, sig)
	// The stop takes effect asynchronously (other threads may take the
	// signal): wait until continued. The kernel discards a terminal stop
	// signal sent to an orphaned process group, hence the bound.
	select {
	case <-cont:
	case <-time.After(stopSettle):
	}
	// Continued, by fg (the shell gave zklock the terminal) or bg.
	if c.tty.ours() {
		_ = c.tty.give(c.pid)
	}
	_ = c.signal(syscall.SIGCONT)
}
