package zktest

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

	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// holderEnv makes a test binary a lock-holding child process:
// "servers|path|kind|session timeout".
const holderEnv = "ZKR_LOCKTEST_HOLDER"

// NewLockerFunc builds the Locker of a kind ("write", "read", ...; the
// backend chooses the names) at path on client.
type NewLockerFunc func(c *session.Client, path, kind string) (recipes.Locker, error)

// RunHolderIfChild turns this test binary into a holder process when it was
// started by StartHolder: it acquires the lock, prints "acquired <token>",
// and holds it until it is killed (or a minute passes), then exits. Call it
// first thing in TestMain.
func RunHolderIfChild(newLocker NewLockerFunc) {
	spec := os.Getenv(holderEnv)
	if spec == "" {
		return
	}
	os.Exit(holdMain(spec, newLocker))
}

func holdMain(spec string, newLocker NewLockerFunc) int {
	parts := strings.Split(spec, "|")
	if len(parts) != 4 {
		fmt.Println("error bad", holderEnv, spec)
		return 2
	}
	timeout, err := time.ParseDuration(parts[3])
	if err != nil {
		fmt.Println("error", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := session.Connect(ctx, strings.Split(parts[0], ","), session.WithSessionTimeout(timeout), session.WithLogger(nil))
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	l, err := newLocker(c, parts[1], parts[2])
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	lease, err := l.Acquire(ctx)
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	token, _ := lease.Token()
	fmt.Println("acquired", token)
	<-ctx.Done()
	return 0
}

// Holder is a child process holding a lock.
type Holder struct {
	cmd *exec.Cmd
}

// StartHolder starts this test binary as a child process (see
// RunHolderIfChild) holding the lock of kind at path, with its own session
// of the given timeout, and returns once it holds the lock. The child is
// killed at t's cleanup.
func StartHolder(t *testing.T, servers []string, path, kind string, sessionTimeout time.Duration) *Holder {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%s|%s|%s", holderEnv, strings.Join(servers, ","), path, kind, sessionTimeout))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(out)
		if s.Scan() {
			line <- s.Text()
		}
		close(line)
		_, _ = bufio.NewReader(out).WriteTo(discard{}) // drain until exit
	}()
	select {
	case l := <-line:
		if !strings.HasPrefix(l, "acquired ") {
			t.Fatalf("holder process said %q", l)
		}
	case <-time.After(time.Minute):
		t.Fatal("holder process never acquired")
	}
	return &Holder{cmd: cmd}
}

// Kill kills the holder with SIGKILL, as a crash would.
func (h *Holder) Kill(t *testing.T) {
	t.Helper()
	if err := h.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
