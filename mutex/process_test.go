package mutex_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/session"
)

// holderEnv makes the test binary a lock-holding child process:
// "servers|path|session timeout".
const holderEnv = "ZKR_MUTEX_HOLDER"

// holderMain acquires the lock, prints "acquired <token>" and holds it until
// killed (or a minute passes).
func holderMain() int {
	parts := strings.Split(os.Getenv(holderEnv), "|")
	timeout, _ := time.ParseDuration(parts[2])
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := session.Connect(ctx, strings.Split(parts[0], ","), session.WithSessionTimeout(timeout), session.WithLogger(nil))
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	m, err := mutex.New(c, parts[1])
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	lease, err := m.Acquire(ctx)
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println("acquired", lease.Token())
	<-ctx.Done()
	return 0
}

// A holder process killed with SIGKILL: the next waiter acquires once the
// server expires the dead process's session.
func TestHolderKilled(t *testing.T) {
	servers := sharedServers(t)
	const path, timeout = "/faults/sigkill", 2 * time.Second
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%s|%s", holderEnv, strings.Join(servers, ","), path, timeout))
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(out)
		if s.Scan() {
			line <- s.Text()
		}
		close(line)
	}()
	select {
	case l := <-line:
		require.True(t, strings.HasPrefix(l, "acquired "), "holder said %q", l)
	case <-time.After(waitLimit):
		t.Fatal("holder process never acquired")
	}

	c := connect(t, servers)
	m := newMutex(t, c, path)
	_, err = m.TryAcquire(ctxT(t))
	require.Error(t, err, "the holder process holds the lock")

	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	lease, err := m.Acquire(ctxT(t)) // bounded by waitLimit: well past the 2s session timeout
	require.NoError(t, err, "the waiter never acquired after the holder was killed")
	parts, err := m.Participants(ctxT(t))
	require.NoError(t, err)
	require.Len(t, parts, 1)
	assert.True(t, parts[0].Holder)
	require.NoError(t, lease.Release(ctxT(t)))
}
