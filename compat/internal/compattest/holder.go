package compattest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// holderEnv makes a test binary a lock-holding child process; its value is
// the spec given to the test's NewLockerFunc.
const holderEnv = "ZKR_COMPAT_HOLDER"

// NewLockerFunc builds, in the child, the Locker that spec describes.
type NewLockerFunc func(spec string) (recipes.Locker, error)

// RunHolderIfChild turns this test binary into a holder process when
// StartHolder started it: it acquires the lock, prints "acquired <token>
// <deadline>" (the lease's deadline, in Unix nanoseconds), and when the
// lease ends prints "ended <when> <cause>" and exits. Call it first in
// TestMain.
func RunHolderIfChild(newLocker NewLockerFunc) {
	spec := os.Getenv(holderEnv)
	if spec == "" {
		return
	}
	os.Exit(holdMain(spec, newLocker))
}

func holdMain(spec string, newLocker NewLockerFunc) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l, err := newLocker(spec)
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
	deadline := ttl.Deadline(lease.(*recipes.HeldLease).Holding())
	fmt.Println("acquired", token, deadline.UnixNano())
	select {
	case <-lease.Done():
		fmt.Println("ended", time.Now().UnixNano(), context.Cause(lease.Context()))
	case <-ctx.Done():
	}
	return 0
}

// Holder is a child process holding a lock.
type Holder struct {
	cmd      *exec.Cmd
	lines    chan string
	Token    int64
	Deadline time.Time // when its lease stops being trusted, unless renewed
}

// StartHolder starts this test binary as a holder of the lock spec
// describes and returns once it holds it; t's cleanup kills it.
func StartHolder(t *testing.T, spec string) *Holder {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holderEnv+"="+spec)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &Holder{cmd: cmd, lines: make(chan string, 4)}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	go func() {
		defer close(h.lines)
		for s := bufio.NewScanner(out); s.Scan(); {
			h.lines <- s.Text()
		}
	}()
	f := strings.Fields(h.next(t, "acquired"))
	if len(f) != 3 {
		t.Fatalf("holder process said %q", f)
	}
	h.Token, _ = strconv.ParseInt(f[1], 10, 64)
	ns, _ := strconv.ParseInt(f[2], 10, 64)
	h.Deadline = time.Unix(0, ns)
	return h
}

// next returns the holder's next line, which must start with want.
func (h *Holder) next(t *testing.T, want string) string {
	t.Helper()
	select {
	case l, ok := <-h.lines:
		if !ok || !strings.HasPrefix(l, want+" ") {
			t.Fatalf("holder process said %q, want %q ...", l, want)
		}
		return l
	case <-time.After(WaitLimit):
		t.Fatalf("holder process said nothing in %v", WaitLimit)
		return ""
	}
}

// Signal sends sig to the holder (SIGSTOP pauses it, SIGCONT resumes it).
func (h *Holder) Signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := h.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// Ended waits until the holder reports its lease ended, and returns when
// and why.
func (h *Holder) Ended(t *testing.T) (time.Time, string) {
	t.Helper()
	f := strings.SplitN(h.next(t, "ended"), " ", 3)
	ns, _ := strconv.ParseInt(f[1], 10, 64)
	return time.Unix(0, ns), f[2]
}
