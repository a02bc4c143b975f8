package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
)

// zklock in the foreground of a terminal gives it to the command's process
// group: the command reads the terminal, and Ctrl-C reaches the command.
// zklock runs as a session leader with a pseudo-terminal as its controlling
// terminal, as under a login shell.
func TestTerminalForeground(t *testing.T) {
	srv := zkServers(t)
	path := lockPath(t)
	master, slave := openPTY(t)

	script := `set -- $(cat /proc/$$/stat); echo "pgrp=$5 tpgid=$8"; read x; echo "got $x"; exec sleep 60`
	cmd := exec.Command(zklockBin, "--servers", srv, "-v", path, "--", "sh", "-c", script)
	cmd.Env = os.Environ()
	if raceEnabled {
		cmd.Env = append(cmd.Env, "GORACE=atexit_sleep_ms=0")
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	require.NoError(t, cmd.Start())
	slave.Close() // the child has its copies
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			_ = cmd.Process.Kill()
			<-done
		}
	})

	out := &lockedBuffer{}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			out.Write(buf[:n])
			if err != nil {
				return // EIO once no process has the terminal open
			}
		}
	}()
	t.Cleanup(func() {
		master.Close()
		<-readDone
		if t.Failed() {
			t.Logf("terminal output:\n%s", out)
		}
	})
	waitFor := func(s string) {
		t.Helper()
		waitUntil(t, fmt.Sprintf("%q on the terminal", s), func() (bool, string) {
			return strings.Contains(out.String(), s), out.String()
		})
	}

	waitFor("tpgid=")
	var pgrp, tpgid int
	line := out.String()[strings.Index(out.String(), "pgrp="):]
	_, err := fmt.Sscanf(line, "pgrp=%d tpgid=%d", &pgrp, &tpgid)
	require.NoError(t, err, "line %q", line)
	assert.NotEqual(t, cmd.Process.Pid, pgrp, "the command has a process group of its own")
	assert.Equal(t, pgrp, tpgid, "the command's process group has the terminal")

	_, err = master.Write([]byte("hello\n"))
	require.NoError(t, err)
	waitFor("got hello")

	// Ctrl-C once the shell has become sleep: a shell that is forking
	// catches SIGINT and may lose it in the child.
	waitUntil(t, "the command to exec sleep", func() (bool, string) {
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pgrp))
		return err == nil && string(comm) == "sleep\n", string(comm)
	})
	_, err = master.Write([]byte{0x03}) // Ctrl-C: SIGINT to the foreground group
	require.NoError(t, err)
	select {
	case <-done:
	case <-time.After(waitLimit):
		t.Fatalf("zklock did not exit within %v after Ctrl-C", waitLimit)
	}
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	require.True(t, ws.Exited(), "zklock died: %v", cmd.ProcessState)
	assert.Equal(t, 130, ws.ExitStatus(), "the command died of SIGINT")
	<-readDone
	assert.Contains(t, out.String(), "zklock: released mutex "+path)
	assert.NotContains(t, out.String(), "DATA RACE")
	assert.Empty(t, participants(t, zkClient(t, srv), path))
}

// openPTY opens a pseudo-terminal pair. Without one the test is skipped,
// or fails when integration is required (harness.Unavailable): a run that
// must test everything is not green with the terminal cases skipped.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		harness.Unavailable(t, "no pseudo-terminals: %v", err)
	}
	var n uint32
	ioctl := func(req uintptr, arg unsafe.Pointer) error {
		raw, err := m.SyscallConn()
		if err != nil {
			return err
		}
		var errno syscall.Errno
		if err := raw.Control(func(fd uintptr) {
			_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, req, uintptr(arg))
		}); err != nil {
			return err
		}
		if errno != 0 {
			return errno
		}
		return nil
	}
	var unlock int32
	err = errors.Join(ioctl(syscall.TIOCSPTLCK, unsafe.Pointer(&unlock)), ioctl(syscall.TIOCGPTN, unsafe.Pointer(&n)))
	if err != nil {
		m.Close()
		harness.Unavailable(t, "pseudo-terminal setup: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		harness.Unavailable(t, "open /dev/pts/%d: %v", n, err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}
