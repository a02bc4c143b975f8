package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
	c, err := redlock.NewClient(servers) // no I/O yet
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close() // before the go-redis clients: it waits for its releases in the background
	// Every process that shares the lock uses the same TTL. A new server
	// grants nothing for its first TTL: short here, so the example is quick.
	l, err := redlock.New(c, "example-reports", redlock.WithTTL(2*time.Second))
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

	// Another process's lock on the same name (here over the same Client).
	theirs, _ := redlock.New(c, "example-reports", redlock.WithTTL(2*time.Second))
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

// Servers that ask for authentication, and an ACL user on each that may
// use the lock's keys alone: those under its key prefix, with the
// commands ACLRule lists.
func Example_secured() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The operator's side: the user's line in each server's redis.conf (or
	// ACL SETUSER locker on >s3cret ...) grants the rule of the prefix "app:".
	fmt.Println(redlock.ACLRule("app:"))
	addrs, stop := exampleSecureRedis(3, "locker on >s3cret "+redlock.ACLRule("app:")) // your servers
	defer stop()

	// The client's side: authentication (and TLS: TLSConfig) are go-redis's
	// options.
	servers := make([]redlock.Redis, len(addrs))
	for i, addr := range addrs {
		r := redis.NewClient(&redis.Options{Addr: addr, Username: "locker", Password: "s3cret"})
		defer r.Close()
		servers[i] = r
	}
	c, err := redlock.NewClient(servers, redlock.WithKeyPrefix("app:"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	l, err := redlock.New(c, "reports", redlock.WithTTL(2*time.Second))
	if err != nil {
		fmt.Println(err)
		return
	}
	lease, err := l.Acquire(ctx) // keys app:{reports} and app:{reports}:quiet
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("held")
	fmt.Println(lease.Release(ctx))

	// Without the prefix, the user may not touch the lock's keys: Acquire
	// fails at once, and says why.
	bare, _ := redlock.NewClient(servers)
	defer bare.Close()
	other, _ := redlock.New(bare, "reports", redlock.WithTTL(2*time.Second))
	_, err = other.Acquire(ctx)
	fmt.Println("refused:", errors.Is(err, recipes.ErrNotAcquired), strings.Contains(err.Error(), "NOPERM"))
	// Output:
	// ~app:* +evalsha +eval +get +set +exists +pexpire +pttl +del +time +info
	// held
	// <nil>
	// refused: true true
}
