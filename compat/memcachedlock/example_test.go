package memcachedlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/zkrecipes/zkrecipes/compat/memcachedlock"
	"github.com/zkrecipes/zkrecipes/recipes"
)

func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addr, stop := exampleMemcached() // your memcached's address (one server)
	defer stop()

	mc := memcache.New(addr)
	defer mc.Close()
	l, err := memcachedlock.New(mc, "example-orders",
		// Required, or WithoutEvictionCheck: the first Acquire checks that
		// memcached runs with -M, so that it cannot evict a held lock.
		memcachedlock.WithServerAddr(addr),
		// Every process that shares the lock uses the same TTL. A new
		// server grants nothing for its first TTL + 2 s: the shortest TTL
		// here, so the example is quick.
		memcachedlock.WithTTL(memcachedlock.MinTTL)) // no I/O yet
	if err != nil {
		fmt.Println(err)
		return
	}
	lease, err := l.Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	// Work with lease.Context(): it is cancelled before memcached can let
	// the lock go, and fence writes with the token (the item's CAS value).
	work := lease.Context()
	_, ok := lease.Token()
	fmt.Println("fencing token:", ok)

	// Another process's lock on the same key, with a client of its own.
	other := memcache.New(addr)
	defer other.Close()
	theirs, _ := memcachedlock.New(other, "example-orders",
		memcachedlock.WithServerAddr(addr), memcachedlock.WithTTL(memcachedlock.MinTTL))
	_, err = theirs.TryAcquire(ctx)
	fmt.Println("held elsewhere:", errors.Is(err, recipes.ErrLocked))

	fmt.Println(lease.Release(ctx))
	fmt.Println("lease ended:", context.Cause(work))
	// Output:
	// fencing token: true
	// held elsewhere: true
	// <nil>
	// lease ended: recipes: lease released
}

// New refuses a lock that has neither WithServerAddr nor
// WithoutEvictionCheck, and a TTL under MinTTL: memcached counts whole
// seconds and may expire an item up to 2 s early.
func ExampleNew() {
	mc := memcache.New("127.0.0.1:11211")
	_, err := memcachedlock.New(mc, "example-jobs")
	fmt.Println("no eviction check:", errors.Is(err, recipes.ErrInvalidArgument))
	_, err = memcachedlock.New(mc, "example-jobs", memcachedlock.WithoutEvictionCheck(),
		memcachedlock.WithTTL(time.Second))
	fmt.Println("TTL under MinTTL:", errors.Is(err, recipes.ErrInvalidArgument))
	_, err = memcachedlock.New(mc, "example-jobs", memcachedlock.WithServerAddr("127.0.0.1:11211"),
		memcachedlock.WithTTL(memcachedlock.MinTTL))
	fmt.Println("with the server's address:", err)
	// Output:
	// no eviction check: true
	// TTL under MinTTL: true
	// with the server's address: <nil>
}
