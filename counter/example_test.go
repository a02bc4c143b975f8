package counter_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes/counter"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/session"
)

// exampleServers starts (once) the ZooKeeper the examples use; in your code
// these are your ensemble's addresses.
var exampleServers = zktest.SharedForExample

// Order numbers from a counter that Java services (Curator's
// DistributedAtomicLong on the same paths) draw from too.
func ExampleLong() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := session.Connect(ctx, exampleServers(), session.WithLogger(nil))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	ids, err := counter.NewLong(client, "/examples/counter/order-ids", counter.WithLock("/examples/counter/order-ids-lock"))
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = ids.Set(ctx, 1000) // start over, for the example

	r, err := ids.Increment(ctx)
	switch {
	case errors.Is(err, counter.ErrOutcomeUnknown):
		fmt.Println("the connection dropped while the write was out: read the counter to know")
	case err != nil:
		fmt.Println("no id:", err) // ErrNotApplied: nothing written
	default:
		fmt.Println("order id:", r.Post)
	}

	// Compare and set: one try, an error when the counter moved.
	_, err = ids.CompareAndSet(ctx, 999, 2000)
	fmt.Println("from 999:", errors.Is(err, counter.ErrNotApplied))
	r, err = ids.CompareAndSet(ctx, 1001, 2000)
	fmt.Println("from 1001:", r.Pre, "->", r.Post, err)
	// Output:
	// order id: 1001
	// from 999: true
	// from 1001: 1001 -> 2000 <nil>
}

// A count of running jobs that Java services (Curator's
// DistributedAtomicInteger, or a SharedCount: the same 4 bytes) change
// too: optimistic tries only, no lock path.
func ExampleInt() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := session.Connect(ctx, exampleServers(), session.WithLogger(nil))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	running, err := counter.NewInt(client, "/examples/counter/running-jobs")
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = running.Set(ctx, 0) // start over, for the example

	if r, err := running.Increment(ctx); err == nil {
		fmt.Println("running:", r.Pre, "->", r.Post)
	}
	if r, err := running.Add(ctx, 2); err == nil {
		fmt.Println("running:", r.Pre, "->", r.Post)
	}
	if r, err := running.Decrement(ctx); err == nil {
		fmt.Println("running:", r.Pre, "->", r.Post)
	}
	// Output:
	// running: 0 -> 1
	// running: 1 -> 3
	// running: 3 -> 2
}

// A configuration document (Curator's DistributedAtomicValue): replaced
// only if it is still the one read, so two editors cannot lose each
// other's change.
func ExampleValue() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := session.Connect(ctx, exampleServers(), session.WithLogger(nil))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	conf, err := counter.NewValue(client, "/examples/counter/config")
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = conf.Set(ctx, []byte(`{"workers":4}`)) // start over, for the example

	old, err := conf.Get(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := conf.CompareAndSet(ctx, old, []byte(`{"workers":8}`))
	fmt.Printf("%s -> %s %v\n", r.Pre, r.Post, err)
	// A second editor that read the old document too:
	_, err = conf.CompareAndSet(ctx, old, []byte(`{"workers":2}`))
	fmt.Println("stale edit applied:", !errors.Is(err, counter.ErrNotApplied))
	// Output:
	// {"workers":4} -> {"workers":8} <nil>
	// stale edit applied: false
}
