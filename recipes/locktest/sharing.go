package locktest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// sharedHold is how long a holder stays in the shared section: long enough
// for other sharers to come in meanwhile, so that sharing can be observed,
// and for an overlapping holder to find it inside.
const sharedHold = 5 * time.Millisecond

// sharedSection is the oracle of a shared lock: sharers may be inside
// together, a Blocker holder only alone. Every entry checks, under one mutex,
// for the holders it must not meet, so any overlap of a Blocker's stay with
// anyone else's is seen by whichever of the two came in second.
type sharedSection struct {
	mu       sync.Mutex
	sharers  map[*occupant]struct{} // inside now
	blocker  *occupant              // inside now, or nil
	together int                    // most sharers inside with live leases at once
	lost     int                    // leases that ended while their holder was inside
}

// liveSharers counts the sharers inside whose leases have not ended. s.mu is held.
func (s *sharedSection) liveSharers() (n int, one *occupant) {
	for o := range s.sharers {
		if !ended(o.lease) {
			n, one = n+1, o
		}
	}
	return n, one
}

// enter runs one holder's stay: a sharer's (blocker false) or a Blocker's. It
// fails when the holder finds inside someone it must exclude or be excluded
// by, with a live lease.
func (s *sharedSection) enter(contender int, lease recipes.Lease, blocker bool) error {
	me := &occupant{contender: contender, lease: lease}
	who := func(o *occupant, blocker bool) string {
		if blocker {
			return fmt.Sprintf("the Blocker (%s)", tokenOf(o.lease))
		}
		return fmt.Sprintf("sharer %d (%s)", o.contender, tokenOf(o.lease))
	}
	s.mu.Lock()
	if in := s.blocker; in != nil && !ended(in.lease) {
		s.mu.Unlock()
		return fmt.Errorf("%s acquired the lock while %s held it with a live lease",
			who(me, blocker), who(in, true))
	}
	if blocker {
		if n, in := s.liveSharers(); n > 0 {
			s.mu.Unlock()
			return fmt.Errorf("%s acquired the lock while %s held it with a live lease (%d sharers in all)",
				who(me, true), who(in, false), n)
		}
		s.blocker = me
	} else {
		s.sharers[me] = struct{}{}
		if n, _ := s.liveSharers(); n > s.together {
			s.together = n
		}
	}
	s.mu.Unlock()

	time.Sleep(sharedHold)

	s.mu.Lock()
	defer s.mu.Unlock()
	if ended(lease) {
		s.lost++
	}
	if blocker {
		s.blocker = nil
	} else {
		delete(s.sharers, me)
	}
	return nil
}

// checkSharing, the exclusion scenario of a Shared backend: Contenders
// sharers (at least two) and one Blocker take the lock Rounds times each and
// stay inside a while. A Blocker holder must never meet a live lease of
// anyone else, and sharers must have been inside together at least once.
func checkSharing(ctx context.Context, t *testing.T, b Backend, name string) error {
	sharers := make([]recipes.Locker, max(2, b.contenders()))
	for i := range sharers {
		sharers[i] = b.New(t, name)
	}
	blocker := b.Blocker(t, name)
	s := &sharedSection{sharers: map[*occupant]struct{}{}}

	errs := make([]error, len(sharers)+1)
	var wg sync.WaitGroup
	for i, l := range sharers {
		wg.Go(func() { errs[i] = stay(ctx, s, fmt.Sprintf("sharer %d", i), i, l, false, b.rounds()) })
	}
	wg.Go(func() { errs[len(sharers)] = stay(ctx, s, "the Blocker", -1, blocker, true, b.rounds()) })
	wg.Wait()
	if s.lost > 0 {
		t.Logf("%d leases ended while held with no fault injected", s.lost)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if s.together < 2 {
		return fmt.Errorf("the sharers never held the lock at the same time: %d sharers took it %d times each, "+
			"staying %v, and no sharer ever found another inside (a shared lock must let sharers hold together)",
			len(sharers), b.rounds(), sharedHold)
	}
	t.Logf("up to %d sharers held the lock at once", s.together)
	return nil
}

// stay is one contender of checkSharing: rounds acquisitions of l, each with
// a stay in s.
func stay(ctx context.Context, s *sharedSection, who string, contender int, l recipes.Locker,
	blocker bool, rounds int) error {
	return holdRounds(ctx, who, l, rounds, func(lease recipes.Lease) error {
		return s.enter(contender, lease, blocker)
	})
}

// checkHoldTogether: goroutines sharing the sharer l, each with a context of
// its own (carrying no lease), all hold it at the same time, and a Blocker
// is kept out meanwhile. Their leases are released before it returns.
func checkHoldTogether(ctx context.Context, t *testing.T, b Backend, name string, l recipes.Locker, n int) error {
	var held holdings
	gctx, stop := context.WithCancel(ctx)
	results := make(chan result, n)
	pending := n
	defer func() {
		stop() // ends the Acquires still waiting
		held.releaseAll(ctx)
		cctx, cancel := cleanupContext(ctx)
		defer cancel()
		for ; pending > 0; pending-- {
			select {
			case r := <-results:
				if r.lease != nil {
					_ = r.lease.Release(cctx)
				}
			case <-cctx.Done():
				return
			}
		}
	}()
	for range n {
		go func() {
			lease, err := l.Acquire(gctx)
			results <- result{lease, err}
		}()
	}
	pctx, cancel := context.WithTimeout(ctx, promptTimeout)
	defer cancel()
	for pending > 0 {
		select {
		case r := <-results:
			pending--
			lease, err := checkTaken(ctx, "Acquire by a goroutine sharing one sharer Locker", r.lease, r.err)
			if err != nil {
				return err
			}
			held.keep(lease)
		case <-pctx.Done():
			return fmt.Errorf("%d goroutines sharing one sharer Locker, each with its own context, did not hold it "+
				"together: %d held it while the others were still waiting when the wait ended (%v)",
				n, len(held.leases), context.Cause(pctx))
		}
	}
	for i, lease := range held.leases {
		if err := checkHeld(lease, fmt.Sprintf("lease %d of the goroutines sharing one sharer Locker", i+1)); err != nil {
			return err
		}
	}
	if err := refuse(pctx, fmt.Sprintf("TryAcquire by a Blocker while %d goroutines share one sharer Locker", n),
		b.Blocker(t, name).TryAcquire, recipes.ErrLocked, recipes.ErrNotAcquired); err != nil {
		return err
	}
	for len(held.leases) > 0 {
		if err := held.release(ctx, held.leases[0]); err != nil {
			return fmt.Errorf("release by a goroutine sharing one sharer Locker: %w", err)
		}
	}
	return nil
}
