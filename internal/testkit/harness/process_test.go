package harness

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func shProcess(t *testing.T, script string) *process {
	dir := t.TempDir()
	p := &process{name: "sh", argv: []string{"/bin/sh", "-c", script}, dir: dir, logPath: filepath.Join(dir, "log")}
	t.Cleanup(func() { _ = p.kill() })
	return p
}

func TestProcessEarlyExitShowsLog(t *testing.T) {
	p := shProcess(t, "echo boom >&2; exit 3")
	if err := p.start(); err != nil {
		t.Fatal(err)
	}
	err := waitFor(p, "ready", 10*time.Second, 10*time.Millisecond, func() error { return errors.New("not yet") })
	if err == nil || !strings.Contains(err.Error(), "boom") || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("error %v: want the exit status and the log tail", err)
	}
}

func TestProcessStopEscalates(t *testing.T) {
	p := shProcess(t, `trap "" TERM; sleep 30 & wait`)
	if err := p.start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // let the trap be set
	if err := p.signal(syscall.SIGSTOP); err != nil || !p.isPaused() {
		t.Fatalf("pause: %v", err)
	}
	start := time.Now()
	if err := p.stop(300 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if p.running() || time.Since(start) > 5*time.Second {
		t.Fatalf("running=%v after %v", p.running(), time.Since(start))
	}
	// The group is gone too: the sleep child was killed with its parent
	// (it may linger as a zombie until init reaps it).
	pgid := p.cmd.Process.Pid
	err := waitFor(nil, "process group gone", 5*time.Second, 20*time.Millisecond, func() error {
		if live := liveInGroup(pgid); len(live) > 0 {
			return fmt.Errorf("live members %v", live)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A stopped process starts again.
	if err := p.start(); err != nil || !p.running() {
		t.Fatalf("restart: %v", err)
	}
	if err := p.kill(); err != nil || p.running() {
		t.Fatalf("kill: %v", err)
	}
}

// liveInGroup lists the pids of processes in group pgid that are not zombies.
func liveInGroup(pgid int) []string {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var live []string
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...; comm may contain spaces.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 2 && f[2] == fmt.Sprint(pgid) && f[0] != "Z" {
			live = append(live, filepath.Base(filepath.Dir(st)))
		}
	}
	return live
}
