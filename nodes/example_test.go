package nodes_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/nodes"
	"github.com/zkrecipes/zkrecipes/session"
)

// exampleServers starts (once) the ZooKeeper the examples use; in your code
// these are your ensemble's addresses.
var exampleServers = zktest.SharedForExample

func ExampleNewPersistent() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := session.Connect(ctx, exampleServers(), session.WithLogger(nil))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	n, err := nodes.NewPersistent(client, "/example-nodes/worker", session.Ephemeral, []byte("v1"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer n.Close(ctx)
	p, err := n.Placed(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Path(), p.Generation())

	// Someone deletes it: the placement ends, and the node comes back.
	_ = client.Delete(ctx, "/example-nodes/worker", -1)
	<-p.Done()
	fmt.Println(context.Cause(p.Context()))
	p, _ = n.Placed(ctx)
	fmt.Println(p.Path(), p.Generation())

	_ = n.SetData(ctx, []byte("v2"))
	data, _, _ := client.Get(ctx, "/example-nodes/worker")
	fmt.Println(string(data))
	// Output:
	// /example-nodes/worker 1
	// nodes: node deleted by another client
	// /example-nodes/worker 2
	// v2
}

func ExampleNewGroupMember() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := session.Connect(ctx, exampleServers(), session.WithLogger(nil))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	a, _ := nodes.NewGroupMember(client, "/example-group", "a", []byte("10.0.0.1"))
	defer a.Close(ctx)
	b, _ := nodes.NewGroupMember(client, "/example-group", "b", []byte("10.0.0.2"))
	defer b.Close(ctx)
	_ = b.Node().WaitForInitialCreate(ctx)
	for len(a.Members()) < 2 { // the cache sees b soon after it is made
		time.Sleep(10 * time.Millisecond)
	}
	m := a.Members()
	for _, id := range slices.Sorted(maps.Keys(m)) {
		fmt.Println(id, string(m[id]))
	}
	// Output:
	// a 10.0.0.1
	// b 10.0.0.2
}

func ExampleNewTTL() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := session.Connect(ctx, exampleServers(), session.WithLogger(nil))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	// The examples' server runs without extended types.
	n, _ := nodes.NewTTL(client, "/example-ttl", time.Minute, nil)
	defer n.Close(ctx)
	err = n.WaitForInitialCreate(ctx)
	fmt.Println(errors.Is(err, session.ErrTTLDisabled))
	// Output:
	// true
}
