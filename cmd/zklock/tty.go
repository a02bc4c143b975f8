package main

import (
	"os/signal"
	"syscall"
	"unsafe"
)

// terminal is zklock's controlling terminal, when one of stdin, stdout,
// stderr is it. If zklock is in its foreground, COMMAND's process group is
// given the terminal, so that it can read it and gets Ctrl-C and Ctrl-Z
// itself; zklock takes the terminal back when COMMAND stops or exits, and
// follows COMMAND's stops as a shell follows a job's (see child.suspend).
type terminal struct {
	fd   int // a descriptor of the terminal (0, 1 or 2)
	pgrp int // zklock's own process group
}

// controllingTerminal returns the controlling terminal if one of stdin,
// stdout, stderr is it, else nil.
func controllingTerminal() *terminal {
	for fd := 0; fd <= 2; fd++ {
		if _, err := tcgetpgrp(fd); err == nil {
			return &terminal{fd: fd, pgrp: syscall.Getpgrp()}
		}
	}
	return nil
}

// ours reports whether zklock's process group is in the foreground.
func (t *terminal) ours() bool { return t.foreground(t.pgrp) }

// foreground reports whether process group pgrp has the terminal.
func (t *terminal) foreground(pgrp int) bool {
	pg, err := tcgetpgrp(t.fd)
	return err == nil && pg == pgrp
}

// give puts process group pgrp in the terminal's foreground.
func (t *terminal) give(pgrp int) error {
	// A background process changing the foreground group gets SIGTTOU
	// unless it ignores it.
	signal.Ignore(syscall.SIGTTOU)
	defer signal.Reset(syscall.SIGTTOU)
	return tcsetpgrp(t.fd, pgrp)
}

// takeBack puts zklock's own group back in the foreground if group pgrp
// (COMMAND's) still has it.
func (t *terminal) takeBack(pgrp int) {
	if t.foreground(pgrp) {
		_ = t.give(t.pgrp)
	}
}

func tcgetpgrp(fd int) (int, error) {
	var pg int32
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), uintptr(syscall.TIOCGPGRP), uintptr(unsafe.Pointer(&pg)))
	if errno != 0 {
		return 0, errno
	}
	return int(pg), nil
}

func tcsetpgrp(fd, pgrp int) error {
	pg := int32(pgrp)
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), uintptr(syscall.TIOCSPGRP), uintptr(unsafe.Pointer(&pg)))
	if errno != 0 {
		return errno
	}
	return nil
}
