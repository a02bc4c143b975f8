package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// stopSignals end the wait for the lock (zklock then exits 128+N).
var stopSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// forwardedSignals are passed on to COMMAND's process group while it runs.
var forwardedSignals = []os.Signal{
	syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP,
	syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2,
}

// signals is zklock's own signal handling: caught from the start, so that a
// signal during the connection or the wait is never lost.
type signals struct {
	ch chan os.Signal
}

func catchSignals() *signals {
	s := &signals{ch: make(chan os.Signal, 16)}
	signal.Notify(s.ch, stopSignals...)
	return s
}

// catchForwarded also catches the signals that are only forwarded.
func (s *signals) catchForwarded() { signal.Notify(s.ch, forwardedSignals...) }

// stop restores the default handling.
func (s *signals) stop() { signal.Stop(s.ch) }

// pending returns a signal that arrived and was not handled yet, or nil.
func (s *signals) pending() os.Signal {
	select {
	case sig := <-s.ch:
		return sig
	default:
		return nil
	}
}

// cancelOnSignal calls cancel with an interrupted cause at the first signal,
// until the returned stop func is called (more calls do nothing). stop
// waits for the watcher to end, so afterwards a signal has either cancelled
// the context or is still in s.ch.
func (s *signals) cancelOnSignal(cancel context.CancelCauseFunc) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		select {
		case sig := <-s.ch:
			cancel(interrupted{toSyscall(sig)})
		case <-quit:
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(quit) })
		<-done
	}
}

// interrupted is the cause of a wait ended by a signal.
type interrupted struct{ sig syscall.Signal }

func (e interrupted) Error() string { return "interrupted by " + signalName(e.sig) }

func toSyscall(sig os.Signal) syscall.Signal {
	if s, ok := sig.(syscall.Signal); ok {
		return s
	}
	return syscall.SIGTERM // not reached: Notify delivers syscall.Signal values
}

var signalNames = map[syscall.Signal]string{
	syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT",
	syscall.SIGKILL: "SIGKILL", syscall.SIGTERM: "SIGTERM", syscall.SIGUSR1: "SIGUSR1",
	syscall.SIGUSR2: "SIGUSR2", syscall.SIGCONT: "SIGCONT", syscall.SIGSTOP: "SIGSTOP",
	syscall.SIGTSTP: "SIGTSTP", syscall.SIGPIPE: "SIGPIPE", syscall.SIGABRT: "SIGABRT",
	syscall.SIGSEGV: "SIGSEGV", syscall.SIGALRM: "SIGALRM",
}

// signalName is the conventional name of sig ("SIGTERM").
func signalName(sig syscall.Signal) string {
	if n, ok := signalNames[sig]; ok {
		return n
	}
	return fmt.Sprintf("signal %d", int(sig))
}
