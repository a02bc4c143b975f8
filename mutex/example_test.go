package mutex_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/znode"
)

// exampleServers starts (once) the ZooKeeper the examples use; in your code
// these are your ensemble's addresses.
var exampleServers = zktest.SharedForExample

func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := session.Connect(ctx, exampleServers(), session.WithLogger(nil))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	m, err := mutex.New(client, "/locks/example-orders") // no I/O yet
	if err != nil {
		fmt.Println(err)
		return
	}
	lease, err := m.Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	// Work with lease.Context(): it is cancelled the moment the lock can no
	// longer be trusted (session suspended or lost, node deleted).
	work := lease.Context()

	// Re-entry follows the call chain: the lease's context re-enters.
	inner, err := m.Acquire(work)
	it, _ := inner.Token()
	lt, _ := lease.Token()
	fmt.Println("re-entered:", err == nil, it == lt)
	fmt.Println(inner.Release(ctx), lease.Release(ctx))
	fmt.Println("lease ended:", context.Cause(work))
	// Output:
	// re-entered: true true
	// <nil> <nil>
	// lease ended: recipes: lease released
}

func ExampleMutex_TryAcquire() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, _ := session.Connect(ctx, exampleServers(), session.WithLogger(nil))
	defer a.Close()
	b, _ := session.Connect(ctx, exampleServers(), session.WithLogger(nil))
	defer b.Close()
	ma, _ := mutex.New(a, "/locks/example-try")
	mb, _ := mutex.New(b, "/locks/example-try")

	lease, _ := ma.Acquire(ctx)
	_, err := mb.TryAcquire(ctx)
	fmt.Println(errors.Is(err, recipes.ErrLocked))
	_ = lease.Release(ctx)
	lease, err = mb.TryAcquire(ctx)
	fmt.Println(err)
	_ = lease.Release(ctx)
	// Output:
	// true
	// <nil>
}

func ExampleMutex_fencing() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, _ := session.Connect(ctx, exampleServers(), session.WithLogger(nil))
	defer client.Close()
	m, _ := mutex.New(client, "/locks/example-fencing")

	lease, _ := m.Acquire(ctx)
	zl := lease.(znode.Lease) // every lease of a ZooKeeper lock is one
	// Guarded write: applied only while our lock node exists.
	_, err := zl.GuardedMulti(ctx,
		session.CreateOp(fmt.Sprintf("/example-fenced-%d", time.Now().UnixNano()), []byte("done"), 0))
	fmt.Println("guarded write:", err)
	_ = lease.Release(ctx)
	_, err = zl.GuardedMulti(ctx, session.CreateOp("/example-too-late", nil, 0))
	fmt.Println("after release:", errors.Is(err, session.ErrGuardFailed))
	// Output:
	// guarded write: <nil>
	// after release: true
}

// A locktrace.Trace reports each acquisition and how each holding ended
// (with, for a loss, how long before the server could let the lock go the
// holder was told). Attach it per call through the context, as here, or to
// every recipe of a client with session.WithTrace; contrib/otelrecipes
// and recipes/tracelog turn it into metrics, spans and logs.
func Example_trace() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := session.Connect(ctx, exampleServers(), session.WithLogger(nil))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	m, _ := mutex.New(client, "/locks/example-traced")

	// Hooks run on the library's goroutines: they must not block.
	trace := &locktrace.Trace{
		AcquireDone: func(i locktrace.AcquireDoneInfo) {
			fmt.Println("acquire:", i.Lock.Backend, i.Lock.Kind, i.Lock.Name, i.Outcome, "contended:", i.Contended)
		},
		LeaseEnd: func(i locktrace.LeaseEndInfo) {
			fmt.Println("lease end:", i.Cause, "margin known:", i.HasMargin)
		},
	}
	lease, err := m.Acquire(locktrace.WithTrace(ctx, trace))
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = lease.Release(ctx)
	// Output:
	// acquire: zookeeper mutex /locks/example-traced acquired contended: false
	// lease end: released margin known: false
}
