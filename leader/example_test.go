package leader_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/session"
)

// exampleServers starts (once) the ZooKeeper the examples use; in your code
// these are your ensemble's addresses.
var exampleServers = zktest.SharedForExample

// Two processes campaign; the first leads until it resigns, and the next
// leads at once, with a higher fencing token.
func ExampleElection_Campaign() {
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
	ea, _ := leader.NewLatch(a, "/elections/example-billing", "worker-a") // no I/O yet
	eb, _ := leader.NewLatch(b, "/elections/example-billing", "worker-b")

	l, err := ea.Campaign(ctx) // blocks until worker-a leads
	if err != nil {
		fmt.Println(err)
		return
	}
	// Lead with l.Context(): it is cancelled the moment leadership can no
	// longer be trusted (session suspended or lost), before anyone else can
	// lead. Fence writes with l.Token().
	work := l.Context()
	current, _ := eb.Leader(ctx) // anyone can ask who leads
	fmt.Println("leader:", current.ID)

	next := make(chan *leader.Leadership, 1)
	go func() {
		l, err := eb.Campaign(ctx) // waits behind worker-a
		if err != nil {
			fmt.Println(err)
		}
		next <- l
	}()
	first, _ := l.Token()
	fmt.Println(l.Release(ctx)) // deletes worker-a's node: worker-b leads at once
	fmt.Println("worker-a's term ended:", context.Cause(work))
	lb := <-next
	if lb == nil {
		return
	}
	second, _ := lb.Token()
	fmt.Println("worker-b leads, with a higher token:", second > first)
	_ = lb.Release(ctx)
	// Output:
	// leader: worker-a
	// <nil>
	// worker-a's term ended: recipes: lease released
	// worker-b leads, with a higher token: true
}

// Run leads again and again (Curator's autoRequeue): whenever fn returns,
// or leadership is lost, it campaigns again, until its ctx ends.
func ExampleElection_Run() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := session.Connect(ctx, exampleServers(), session.WithLogger(nil))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	e, _ := leader.NewLatch(client, "/elections/example-scheduler", "scheduler-1")

	running, shutDown := context.WithCancel(ctx)
	defer shutDown()
	terms := 0
	err = e.Run(running, func(ctx context.Context) error {
		// Lead while ctx lasts: it ends when leadership can no longer be
		// trusted, or when Run's ctx ends.
		terms++
		fmt.Println("term", terms)
		if terms == 1 {
			// An error does not stop Run: it resigns and campaigns again
			// (after a pause, since this term was short).
			return errors.New("the queue is unreachable")
		}
		shutDown() // the process is stopping: Run returns after this term
		<-ctx.Done()
		return nil
	})
	fmt.Println("Run ended with its ctx:", errors.Is(err, context.Canceled))
	// Output:
	// term 1
	// term 2
	// Run ended with its ctx: true
}

// Observe follows the leader of an election: an observer need not
// campaign.
func ExampleElection_Observe() {
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
	const path = "/elections/example-indexer"
	observer, _ := leader.NewLatch(b, path, "dashboard")
	candidate, _ := leader.NewLatch(a, path, "indexer-1")

	watching, stopWatching := context.WithCancel(ctx)
	defer stopWatching()
	leaders := observer.Observe(watching) // the current leader, then each change
	fmt.Println("no leader:", (<-leaders).None())
	l, err := candidate.Campaign(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("leader:", (<-leaders).ID)
	_ = l.Release(ctx)
	fmt.Println("no leader:", (<-leaders).None())
	stopWatching()
	for range leaders { // closed once the observation has ended
	}
	// Output:
	// no leader: true
	// leader: indexer-1
	// no leader: true
}
