package barrier_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/barrier"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/session"
)

// exampleServers starts (once) the ZooKeeper the examples use; in your code
// these are your ensemble's addresses.
var exampleServers = zktest.SharedForExample

// Three workers start a batch together and finish it together, each on a
// ZooKeeper session of its own (in production, each in its own process).
func ExampleDouble() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	results := make([]string, 3)
	for i := range 3 {
		client, err := session.Connect(ctx, exampleServers(), session.WithLogger(nil))
		if err != nil {
			fmt.Println(err)
			return
		}
		defer client.Close()
		d, err := barrier.New(client, "/example-batch", 3)
		if err != nil {
			fmt.Println(err)
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := d.Enter(ctx); err != nil { // returns once all 3 are in
				results[i] = err.Error()
				return
			}
			// ... this worker's part of the batch ...
			if err := d.Leave(ctx); err != nil { // returns once all 3 are done
				results[i] = err.Error()
				return
			}
			results[i] = fmt.Sprintf("worker %d done", i)
		}()
	}
	wg.Wait()
	for _, r := range results {
		fmt.Println(r)
	}
	// Output:
	// worker 0 done
	// worker 1 done
	// worker 2 done
}

// A coordinator holds workers back until it removes the barrier.
func ExampleBarrier() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := session.Connect(ctx, exampleServers(), session.WithLogger(nil))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	b, err := barrier.NewBarrier(client, "/example-gate")
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := b.SetBarrier(ctx); err != nil {
		fmt.Println(err)
		return
	}
	through := make(chan error, 1)
	go func() { through <- b.WaitOnBarrier(ctx) }() // a worker

	if err := b.RemoveBarrier(ctx); err != nil { // the coordinator
		fmt.Println(err)
		return
	}
	fmt.Println("worker through:", <-through == nil)
	// Output:
	// worker through: true
}
