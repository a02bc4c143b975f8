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
