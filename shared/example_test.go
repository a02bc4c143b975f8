package shared_test

import (
	"context"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/shared"
)

// exampleServers starts (once) the ZooKeeper the examples use; in your code
// these are your ensemble's addresses.
var exampleServers = zktest.SharedForExample

// A limit that operators change at run time, read by Go and Java
// (Curator's SharedCount) services alike: each follows its changes.
func ExampleCount() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := session.Connect(ctx, exampleServers(), session.WithLogger(nil))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	limit, err := shared.NewCount(client, "/examples/shared/max-workers", 4) // 4 if absent
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = limit.Set(ctx, 4) // start over, for the example

	changes, err := limit.Changes(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("limit:", (<-changes).Value)

	// Raise it by one, unless someone wrote since the read.
	n, version, _ := limit.Get(ctx)
	ok, err := limit.TrySet(ctx, n+1, version)
	fmt.Println("raised:", ok, err)
	fmt.Println("limit:", (<-changes).Value)
	// Output:
	// limit: 4
	// raised: true <nil>
	// limit: 5
}

// Bytes: a feature flag as JSON, set unconditionally.
func ExampleValue() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := session.Connect(ctx, exampleServers(), session.WithLogger(nil))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	flag, err := shared.NewValue(client, "/examples/shared/flag", []byte(`{"on":false}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := flag.Set(ctx, []byte(`{"on":true}`)); err != nil {
		fmt.Println(err)
		return
	}
	v, err := flag.Get(ctx)
	fmt.Println(string(v.Value), err)
	// Output:
	// {"on":true} <nil>
}
