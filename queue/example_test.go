package queue_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/queue"
	"github.com/zkrecipes/zkrecipes/session"
)

// exampleServers starts (once) the ZooKeeper the examples use; in your code
// these are your ensemble's addresses.
var exampleServers = zktest.SharedForExample

// A priority queue with a lock path (Curator's QueueBuilder.lockPath): an
// item stays queued until its handler returns, so a consumer that dies
// mid-item does not lose it.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := session.Connect(ctx, exampleServers(), session.WithLogger(nil))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	q, err := queue.New(client, "/example-jobs",
		queue.WithKind(queue.Priority), queue.WithLockPath("/example-jobs-locks"))
	if err != nil {
		fmt.Println(err)
		return
	}
	_, _ = q.PutPriority(ctx, 5, []byte("later"))
	_, _ = q.PutPriority(ctx, -1, []byte("urgent"), []byte("urgent too")) // one node
	_, _ = q.PutPriority(ctx, 0, []byte("soon"))

	cctx, stop := context.WithCancel(ctx)
	n := 0
	err = q.Consume(cctx, func(ctx context.Context, item []byte) error {
		fmt.Println(string(item))
		if n++; n == 4 {
			stop()
		}
		return nil
	})
	fmt.Println(errors.Is(err, context.Canceled))
	// Output:
	// urgent
	// urgent too
	// soon
	// later
	// true
}

// SimpleQueue is ZooKeeper's own queue recipe (Curator's
// SimpleDistributedQueue, kazoo's Queue): raw bytes, taken at most once.
func ExampleSimpleQueue() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := session.Connect(ctx, exampleServers(), session.WithLogger(nil))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	q, err := queue.NewSimple(client, "/example-simple")
	if err != nil {
		fmt.Println(err)
		return
	}
	_, _ = q.Offer(ctx, []byte("one"))
	_, _ = q.Offer(ctx, []byte("two"))
	head, _ := q.Peek(ctx)
	fmt.Println("peek:", string(head))
	for range 2 {
		item, _ := q.Take(ctx)
		fmt.Println("take:", string(item))
	}
	_, err = q.Poll(ctx)
	fmt.Println(errors.Is(err, queue.ErrEmpty))
	// Output:
	// peek: one
	// take: one
	// take: two
	// true
}
