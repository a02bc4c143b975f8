package session_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/session"
)

// exampleServers starts (once) the ZooKeeper the examples talk to; in your
// code these are your ensemble's addresses.
var exampleServers = zktest.SharedForExample

func ExampleConnect() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	client, err := session.Connect(ctx, exampleServers(),
		session.WithNamespace("/example-app"),
		session.WithSessionTimeout(10*time.Second),
		session.WithLogger(nil)) // nil: discard logs
	if err != nil {
		fmt.Println("connect:", err)
		return
	}
	defer client.Close()

	// The current session: its Done closes when it can no longer be trusted.
	s, err := client.Session(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	node, err := client.Create(ctx, "/workers/w-", []byte("ready"), session.Ephemeral|session.PersistentSequential)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, st, _ := client.Get(ctx, node)
	fmt.Println("owned by this session:", st.EphemeralOwner == s.ID())
	// Output: owned by this session: true
}

func ExampleFencedResource() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := session.Connect(ctx, exampleServers(), session.WithLogger(nil))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	res, _ := client.FencedResource(fmt.Sprintf("/example-fence-%d", time.Now().UnixNano()))
	fmt.Println(res.Write(ctx, 34, []byte("written by the holder with token 34")))
	// A holder that lost the lock long ago wakes up and writes:
	err = res.Write(ctx, 33, []byte("stale"))
	fmt.Println(err != nil, errors.Is(err, session.ErrStaleToken))
	// Output:
	// <nil>
	// true true
}
