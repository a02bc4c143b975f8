package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/zkrecipes/zkrecipes/compat/redlock"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// A lock over three independent Redis servers: held while a majority (two)
// have it.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addrs, stop := exampleRedis(3) // your servers' addresses: independent, not replicas
	defer stop()

	servers := make([]redlock.Redis, len(addrs))
	for i, addr := range addrs {
		r := redis.NewClient(&redis.Options{Addr: addr})
		defer r.Close()
		servers[i] = r
	}
	// Every process that shares the lock uses the same TTL. A new server
	// grants nothing for its first TTL: short here, so the example is quick.
	l, err := redlock.New(servers, "example-reports", redlock.WithTTL(2*time.Second)) // no I/O yet
	if err != nil {
		fmt.Println(err)
		return
	}
	lease, err := l.Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	// Work with lease.Context(): it is cancelled before a majority of the
	// servers can let the lock go. There is no fencing token to guard
	// writes with: a holder paused past the margin may write late.
	work := lease.Context()
	token, ok := lease.Token()
	fmt.Println("fencing token:", token, ok)

	// Another process's lock on the same name (here over the same clients).
	theirs, _ := redlock.New(servers, "example-reports", redlock.WithTTL(2*time.Second))
	_, err = theirs.TryAcquire(ctx)
	fmt.Println("held elsewhere:", errors.Is(err, recipes.ErrLocked))

	fmt.Println(lease.Release(ctx))
	fmt.Println("lease ended:", context.Cause(work))
	// Output:
	// fencing token: 0 false
	// held elsewhere: true
	// <nil>
	// lease ended: recipes: lease released
}
