package compat_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/zkrecipes/zkrecipes/compat/redislock"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Code that holds a lock takes a recipes.Locker and knows no backend
// (shipOrders, below). The backend is chosen in the one line that makes the
// lock, and a program links the client of that backend alone. Here one Redis
// (compat/redislock); the other choices for the same lock are:
//
//	// One memcached (compat/memcachedlock): fenced too; waiters poll.
//	c, err := memcachedlock.NewClient(memcache.New(addr), memcachedlock.WithServerAddr(addr))
//	l, err := memcachedlock.New(c, "shipping")
//	// Independent Redis servers (compat/redlock): a majority holds it; no fencing token.
//	c, err := redlock.NewClient([]redlock.Redis{r1, r2, r3})
//	l, err := redlock.New(c, "shipping")
//	// ZooKeeper (package mutex): fenced, fair, and told of a session's loss.
//	l, err := mutex.New(client, "/locks/shipping")
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addr, stop := exampleRedis() // your Redis's address
	defer stop()

	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	c, err := redislock.NewClient(rdb)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	l, err := redislock.New(c, "example-shipping", redislock.WithTTL(2*time.Second))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(shipOrders(ctx, l))
	// Output:
	// shipping
	// <nil>
}

// shipOrders holds l while it works, whatever l's backend.
func shipOrders(ctx context.Context, l recipes.Locker) error {
	return recipes.WithLock(ctx, l, func(ctx context.Context) error {
		// On every backend, ctx ends before the server can let the lock go.
		fmt.Println("shipping")
		return ctx.Err()
	})
}
