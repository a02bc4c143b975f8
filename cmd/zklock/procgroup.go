package main

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
	"time"
)

// groupPollInterval is how often terminate looks whether COMMAND's process
// group is gone after COMMAND itself has exited.
const groupPollInterval = 20 * time.Millisecond

// signal sends sig to COMMAND's whole process group.
func (c *child) signal(sig syscall.Signal) error {
	return syscall.Kill(-c.pid, sig)
}

// terminate ends COMMAND's process group after the lock was lost: SIGTERM
// (and SIGCONT, so that a stopped group acts on it) at once, then SIGKILL to
// whatever is left of the group once grace has passed. It waits for COMMAND
// to exit and for the rest of its group to be gone or killed, and returns
// how COMMAND ended and whether SIGKILL was needed. Signals zklock receives
// meanwhile are still forwarded.
func (c *child) terminate(grace time.Duration, sigs <-chan os.Signal) (res exitResult, killed bool) {
	_ = c.signal(syscall.SIGTERM)
	_ = c.signal(syscall.SIGCONT)
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	poll := time.NewTicker(groupPollInterval)
	defer poll.Stop()
	exited := false
	for {
		if exited && !groupAlive(c.pid) {
			return res, false
		}
		select {
		case res = <-c.exit:
			exited = true
		case <-poll.C:
		case sig := <-sigs:
			_ = c.signal(toSyscall(sig))
		case <-deadline.C:
			_ = c.signal(syscall.SIGKILL)
			if !exited {
				res = <-c.exit
			}
			return res, true
		}
	}
}

// groupAlive reports whether process group pgid still has a process that is
// not a zombie. kill(2) counts zombies (orphans not yet reaped, which some
// container inits never do), so /proc is consulted when it can be.
func groupAlive(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	if errors.Is(err, syscall.ESRCH) {
		return false
	}
	entries, rerr := os.ReadDir("/proc")
	if rerr != nil {
		return err == nil || errors.Is(err, syscall.EPERM)
	}
	want := strconv.Itoa(pgid)
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// "pid (comm) state ppid pgrp ...": comm may hold spaces and parens.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) < 3 || string(f[2]) != want {
			continue
		}
		if s := string(f[0]); s != "Z" && s != "X" {
			return true
		}
	}
	return false
}
