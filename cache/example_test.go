package cache_test

import (
	"context"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes/cache"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/session"
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
	_, _ = client.Create(ctx, "/example-config", nil, session.Persistent)
	_, _ = client.Create(ctx, "/example-config/color", []byte("blue"), session.Persistent)

	// The node and its children (PathChildrenCache).
	c, err := cache.Start(ctx, client, "/example-config", cache.WithDepth(1))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	for ev := range c.Events() { // the first load, then Initialized
		if ev.Type == cache.Initialized {
			fmt.Println(ev.Type)
			break
		}
		fmt.Println(ev.Type, ev.Node.Path)
	}
	n, _ := c.Get("/example-config/color")
	fmt.Println(string(n.Data), c.Children("/example-config"))

	_, _ = client.Set(ctx, "/example-config/color", []byte("green"), -1)
	ev := <-c.Events()
	fmt.Println(ev.Type, ev.Node.Path, string(ev.Node.Data), ev.Node.Stat.Version)
	// Output:
	// Created /example-config
	// Created /example-config/color
	// Initialized
	// blue [color]
	// Changed /example-config/color green 1
}
