// Package holdertest is what the lock tests of every backend share to check
// the promise that a holder is told first: HolderToldFirst measures the
// margin by which a holder cut off from its server is told before its
// successor is granted the lock, and Start runs a holder in a child process
// (the test binary itself, started again) that a test can kill (SIGKILL)
// or pause (SIGSTOP), as a crash or a long pause would. It is test
// support, not API.
package holdertest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testkit/stalls"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
)

// WaitLimit bounds every wait for the child.
const WaitLimit = 60 * time.Second

// holderEnv makes a test binary a lock-holding child process; its value is
// the spec given to the test's NewLockerFunc.
const holderEnv = "ZKR_TEST_HOLDER"

// NewLockerFunc builds, in the child, the Locker that spec describes.
type NewLockerFunc func(spec string) (recipes.Locker, error)

// DeadlineFunc says until when a lease of the locker is trusted unless
// renewed (a TTL lease's deadline, a session's trust), for the test to
// compare with a successor's grant.
type DeadlineFunc func(locker recipes.Locker, lease recipes.Lease) time.Time

// RunIfChild turns this test binary into a holder process when Start
// started it: it acquires the lock, prints "acquired <token> <deadline>"
// (deadline in Unix nanoseconds, 0 when deadline is nil), and when the
// lease ends prints "ended <when> <cause>" and exits. Call it first in
// TestMain.
func RunIfChild(newLocker NewLockerFunc, deadline DeadlineFunc) {
	spec := os.Getenv(holderEnv)
	if spec == "" {
		return
	}
	os.Exit(holdMain(spec, newLocker, deadline))
}

func holdMain(spec string, newLocker NewLockerFunc, deadline DeadlineFunc) int {
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
	var until int64
	if deadline != nil {
		until = deadline(l, lease).UnixNano()
	}
	fmt.Println("acquired", token, until)
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
	Deadline time.Time // when its lease stops being trusted, unless renewed (zero when unknown)
}

// Start starts this test binary as a holder of the lock spec describes
// and returns once it holds it; t's cleanup kills it.
func Start(t testing.TB, spec string) *Holder {
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
	if ns, _ := strconv.ParseInt(f[2], 10, 64); ns != 0 {
		h.Deadline = time.Unix(0, ns)
	}
	return h
}

// Kill kills the holder with SIGKILL, as a crash would.
func (h *Holder) Kill(t testing.TB) { t.Helper(); h.Signal(t, syscall.SIGKILL) }

// next returns the holder's next line, which must start with want.
func (h *Holder) next(t testing.TB, want string) string {
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
func (h *Holder) Signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if err := h.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// Ended waits until the holder reports its lease ended, and returns when
// and why.
func (h *Holder) Ended(t testing.TB) (time.Time, string) {
	t.Helper()
	f := strings.SplitN(h.next(t, "ended"), " ", 3)
	ns, _ := strconv.ParseInt(f[1], 10, 64)
	return time.Unix(0, ns), f[2]
}

// Moment records when something happened, once.
type Moment struct {
	mu sync.Mutex
	at time.Time
}

// Mark records now, unless a moment was already marked.
func (m *Moment) Mark() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.at.IsZero() {
		m.at = time.Now()
	}
}

// Get is the moment marked; zero when none was.
func (m *Moment) Get() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.at
}

// ToldAt returns the moment lease's context ends.
func ToldAt(lease recipes.Lease) *Moment {
	m := new(Moment)
	context.AfterFunc(lease.Context(), m.Mark)
	return m
}

// HolderToldFirst takes the lock with holder, queues successor behind it,
// runs cut (which cuts the holder off from its server: a blackhole), and
// checks that the holder's lease ended at least want before successor was
// granted the lock. It returns the measured margin.
func HolderToldFirst(t *testing.T, holder, successor recipes.Locker, cut func(), want time.Duration) time.Duration {
	t.Helper()
	r := Queue(t, holder, successor)
	cut()
	return r.Finish(t, want)
}

// Race is a holder of a lock and a successor queued behind it, for a fault
// that ends the holding; several races may share one fault.
type Race struct {
	lease  recipes.Lease
	stalls *stalls.Watch // the process's late timers, from the queueing on
	told   *Moment
	next   chan grant
	cancel context.CancelFunc
}

type grant struct {
	lease recipes.Lease
	at    time.Time
	err   error
}

// Queue takes the lock with holder and queues successor behind it (it
// returns once the successor has had a moment to queue).
func Queue(t *testing.T, holder, successor recipes.Locker) *Race {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), WaitLimit)
	lease, err := holder.Acquire(ctx)
	if err != nil {
		cancel()
		t.Fatalf("holder: %v", err)
	}
	r := &Race{lease: lease, stalls: stalls.Start(), told: ToldAt(lease), next: make(chan grant, 1), cancel: cancel}
	t.Cleanup(r.stalls.Stop) // Finish stops it; a test that fails first does not reach Finish
	go func() {
		l, err := successor.Acquire(ctx)
		r.next <- grant{l, time.Now(), err}
	}()
	time.Sleep(100 * time.Millisecond) // let it queue
	return r
}

// Lease is the holder's lease.
func (r *Race) Lease() recipes.Lease { return r.lease }

// Told is the moment the holder's lease ended (zero while it lives): with
// Finish's margin, the successor's grant is Told().Add(margin).
func (r *Race) Told() time.Time { return r.told.Get() }

// Finish waits for the successor's grant (bounded by WaitLimit), checks
// that the holder's lease ended at least want before it, with a cause
// that is recipes.ErrLockLost, releases the successor's lease, and returns
// the margin.
func (r *Race) Finish(t *testing.T, want time.Duration) time.Duration {
	t.Helper()
	defer r.cancel()
	defer r.stalls.Stop()
	var g grant
	select {
	case g = <-r.next:
	case <-time.After(WaitLimit):
		t.Fatal("the successor never acquired")
	}
	if g.err != nil {
		t.Fatalf("successor: %v", g.err)
	}
	defer func() { _ = g.lease.Release(context.Background()) }()
	at := r.told.Get()
	if at.IsZero() {
		t.Fatal("the successor was granted the lock while the holder's lease was live")
	}
	margin := g.at.Sub(at)
	// The lease is told by a timer of this process: a stall of the
	// process (no CPU for its threads, a stop of the world) just before
	// the moment told delays any timer, the lease's too, and explains that
	// much of a margin short of want. Nothing else does.
	stalled := r.stalls.Longest(at.Add(-want), at)
	t.Logf("holder told %v before the successor's grant (want at least %v, less the process's stall meanwhile: %v); cause: %v",
		margin.Round(time.Millisecond), want, stalled, context.Cause(r.lease.Context()))
	if margin+stalled < want {
		t.Errorf("the holder was told %v before the successor's grant, want at least %v (the process's stalls explain %v)", margin, want, stalled)
	}
	if cause := context.Cause(r.lease.Context()); !errors.Is(cause, recipes.ErrLockLost) {
		t.Errorf("cause %v is not recipes.ErrLockLost", cause)
	}
	return margin
}

// ShortOutage takes the lock with holder and, just after its first
// renewal, cuts it off from its server with cut (connections refused or
// reset, not a silence) for outage, longer than the renewal period and
// well within the lease's validity, then runs restore, and checks that the
// lease lived on: a renewal sent during the outage was tried again until
// the server confirmed it, and nothing ended the lease.
func ShortOutage(t *testing.T, holder recipes.Locker, cut, restore func(), outage time.Duration) {
	t.Helper()
	type renewal struct {
		sent time.Time
		err  error
	}
	var mu sync.Mutex
	var renewals []renewal
	tr := &locktrace.Trace{Renewal: func(r locktrace.RenewalInfo) {
		mu.Lock()
		defer mu.Unlock()
		renewals = append(renewals, renewal{time.Now().Add(-r.Latency), r.Err})
	}}
	ctx, cancel := context.WithTimeout(context.Background(), WaitLimit)
	defer cancel()
	lease, err := holder.Acquire(locktrace.WithTrace(ctx, tr))
	if err != nil {
		t.Fatalf("holder: %v", err)
	}
	defer func() { _ = lease.Release(context.Background()) }()
	renewed := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(renewals) > 0
	}
	for deadline := time.Now().Add(WaitLimit); !renewed() && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	cut()
	from := time.Now()
	time.Sleep(outage)
	to := time.Now()
	restore()
	// The renewal sent during the outage is confirmed once the server is
	// back (or the lease ends, failing the test).
	confirmed := func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range renewals {
			if r.err == nil && !r.sent.Before(from) && r.sent.Before(to) {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(WaitLimit); !confirmed() && lease.Err() == nil && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if err := lease.Err(); err != nil {
		t.Fatalf("an outage of %v ended the lease: %v", outage, context.Cause(lease.Context()))
	}
	if !confirmed() {
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("no renewal sent during the outage was confirmed after it; renewals: %v", renewals)
	}
}
