package semaphore_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/curator"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/semaphore"
)

// What the Curator interop tests share.

// interopAvailable returns the shared servers once Curator's jars are
// there (harness.Unavailable otherwise).
func interopAvailable(t *testing.T) []string {
	t.Helper()
	if err := curator.Available(); err != nil {
		harness.Unavailable(t, "%v; %s", err, curator.Hint)
	}
	return sharedServers(t)
}

// interopAgent is a Curator agent with cmd ("semaphore PATH MAX",
// "semmutex PATH") done.
func interopAgent(t *testing.T, servers []string, name, cmd string) *curator.Agent {
	t.Helper()
	a := curator.Start(t, servers, curator.WithName(name))
	a.DoExpect(t, cmd, "ok")
	return a
}

// interopHolders counts the leases held, as their holders report them: a
// holder enters once its acquire has returned and leaves before it
// releases, so the count is never above the leases really held.
type interopHolders struct {
	mu    sync.Mutex
	max   int
	now   int
	peak  int
	over  []string
	terms map[string]int
}

func newInteropHolders(max int) *interopHolders {
	return &interopHolders{max: max, terms: map[string]int{}}
}

func (h *interopHolders) enter(who string, n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.now += n
	h.peak = max(h.peak, h.now)
	h.terms[who]++
	if h.now > h.max {
		h.over = append(h.over, fmt.Sprintf("%s took %d: %d leases held, max %d", who, n, h.now, h.max))
	}
}

func (h *interopHolders) leave(n int) {
	h.mu.Lock()
	h.now -= n
	h.mu.Unlock()
}

// check: never above the max, the max reached, every holder held.
func (h *interopHolders) check(t *testing.T, who []string) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	require.Empty(t, h.over, "more leases held than the max")
	require.Equal(t, h.max, h.peak, "the max was never reached")
	require.Zero(t, h.now)
	for _, w := range who {
		require.Positive(t, h.terms[w], "%s never held", w)
	}
}

// interopHold is how long a holder keeps its leases: short, varied.
func interopHold() time.Duration { return time.Duration(5+rand.IntN(25)) * time.Millisecond }

// interopWaitLeases polls s's lease nodes until there are n, and returns
// their names.
func interopWaitLeases(t *testing.T, s *semaphore.Semaphore, n int) []string {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		ps, err := s.Leases(ctxT(t))
		require.NoError(t, err)
		if len(ps) == n {
			var names []string
			for _, p := range ps {
				require.Regexp(t, interopLeaseName, p.Name)
				names = append(names, p.Name)
			}
			return names
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d lease nodes after %v, want %d", len(ps), waitLimit, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
