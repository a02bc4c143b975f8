package semaphore_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/semaphore"
	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/shared"
)

// exampleServers starts (once) the ZooKeeper the examples use; in your code
// these are your ensemble's addresses.
var exampleServers = zktest.SharedForExample

// Three leases at once among every process: one takes two, all or none,
// and the others share what is left.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := session.Connect(ctx, exampleServers(), session.WithLogger(nil))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.Close()
	b, _ := session.Connect(ctx, exampleServers(), session.WithLogger(nil))
	defer b.Close()
	ours, _ := semaphore.New(a, "/semaphores/example-render", 3) // no I/O yet
	theirs, _ := semaphore.New(b, "/semaphores/example-render", 3)

	lease, err := ours.Acquire(ctx, 2) // waits until two are free
	if err != nil {
		fmt.Println(err)
		return
	}
	// Work with lease.Context(): it is cancelled the moment the leases can
	// no longer be trusted (session suspended or lost), before the server
	// can let anyone else count them.
	work := lease.Context()

	_, err = theirs.TryAcquire(ctx, 2)
	fmt.Println("two more:", errors.Is(err, recipes.ErrLocked))
	last, err := theirs.TryAcquire(ctx, 1)
	fmt.Println("the last one:", err)
	leases, _ := ours.Leases(ctx)
	fmt.Println("leases held:", len(leases))

	fmt.Println(last.Release(ctx), lease.Release(ctx)) // each gives back all it took
	fmt.Println("lease ended:", context.Cause(work))
	// Output:
	// two more: true
	// the last one: <nil>
	// leases held: 3
	// <nil> <nil>
	// lease ended: recipes: lease released
}

// The limit can live in ZooKeeper, in a shared.Count (Curator's SharedCount), and change
// while the semaphore is in use: a waiter for room sees the change.
func ExampleNewWithCount() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := session.Connect(ctx, exampleServers(), session.WithLogger(nil))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	limit, _ := shared.NewCount(client, "/semaphores/example-crawl-limit", 1) // 1 if it does not exist yet
	s, _ := semaphore.NewWithCount(client, "/semaphores/example-crawl", limit)

	lease, err := s.Acquire(ctx, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = s.TryAcquire(ctx, 1)
	fmt.Println("at the limit:", errors.Is(err, recipes.ErrLocked))
	waiter := make(chan recipes.Lease, 1)
	go func() {
		l, err := s.Acquire(ctx, 1) // waits for room
		if err != nil {
			fmt.Println(err)
		}
		waiter <- l
	}()

	// Raise it by one: a versioned write, so that two processes raising it
	// at once cannot lose a change (TrySet is false when the count moved:
	// read it again). The waiter is let in.
	n, version, _ := limit.Get(ctx)
	ok, err := limit.TrySet(ctx, n+1, version)
	fmt.Println("raised:", ok, err)
	second := <-waiter
	if second == nil {
		return
	}
	fmt.Println("the waiter holds a lease")

	_ = second.Release(ctx)
	_ = lease.Release(ctx)
	n, version, _ = limit.Get(ctx)
	_, _ = limit.TrySet(ctx, n-1, version) // back to where it was
	// Output:
	// at the limit: true
	// raised: true <nil>
	// the waiter holds a lease
}

// Code that takes a lock takes n leases of a semaphore as a
// recipes.Locker: here recipes.WithLock holds two while fn runs.
func ExampleSemaphore_Locker() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := session.Connect(ctx, exampleServers(), session.WithLogger(nil))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	s, _ := semaphore.New(client, "/semaphores/example-export", 2)

	err = recipes.WithLock(ctx, s.Locker(2), func(ctx context.Context) error {
		// ctx ends the moment the leases can no longer be trusted.
		_, err := s.TryAcquire(ctx, 1)
		fmt.Println("all leases taken:", errors.Is(err, recipes.ErrLocked))
		return nil
	})
	fmt.Println(err)
	// Output:
	// all leases taken: true
	// <nil>
}

// The semaphore mutex (Curator's InterProcessSemaphoreMutex) is a lock that
// is not reentrant: asked for again in the call chain that holds it, it
// fails at once rather than wait for itself.
func ExampleMutex() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := session.Connect(ctx, exampleServers(), session.WithLogger(nil))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.Close()
	b, _ := session.Connect(ctx, exampleServers(), session.WithLogger(nil))
	defer b.Close()
	ours, _ := semaphore.NewMutex(a, "/semaphores/example-compaction") // no I/O yet
	theirs, _ := semaphore.NewMutex(b, "/semaphores/example-compaction")

	lease, err := ours.Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	// Work with lease.Context(): it ends when the lock can no longer be
	// trusted. Taking the lock again with it is a mistake, reported at once.
	work := lease.Context()
	_, err = ours.Acquire(work)
	fmt.Println("again in the same call chain:", errors.Is(err, recipes.ErrNotReentrant))
	_, err = theirs.TryAcquire(ctx)
	fmt.Println("held elsewhere:", errors.Is(err, recipes.ErrLocked))
	fmt.Println(lease.Release(ctx))
	// Output:
	// again in the same call chain: true
	// held elsewhere: true
	// <nil>
}
