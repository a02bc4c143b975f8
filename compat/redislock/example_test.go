package redislock_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/zkrecipes/zkrecipes/compat/redislock"
	"github.com/zkrecipes/zkrecipes/recipes"
)

func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addr, stop := exampleRedis() // your Redis's address
	defer stop()

	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	c, err := redislock.NewClient(rdb) // one per process: its waiters share one subscription
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	// Every process that shares the lock uses the same TTL. A new server
	// grants nothing for its first TTL: short here, so the example is quick.
	l, err := redislock.New(c, "example-orders", redislock.WithTTL(2*time.Second)) // no I/O yet
	if err != nil {
		fmt.Println(err)
		return
	}
	lease, err := l.Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	// Work with lease.Context(): it is cancelled before Redis can let the
	// lock go (a renewal failed, the network went silent), and fence writes
	// with the token.
	work := lease.Context()
	_, ok := lease.Token()
	fmt.Println("fencing token:", ok)
	fmt.Println(lease.Release(ctx))
	fmt.Println("lease ended:", context.Cause(work))
	// Output:
	// fencing token: true
	// <nil>
	// lease ended: recipes: lease released
}

// Another process's lock on the same name: TryAcquire fails at once while
// the lock is held, and a waiter in Acquire is handed the lock when it is
// released, with a higher token.
func ExampleLock_TryAcquire() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addr, stop := exampleRedis()
	defer stop()
	// Two processes, each with its own clients.
	newLock := func() (*redislock.Lock, func()) {
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		c, _ := redislock.NewClient(rdb)
		l, _ := redislock.New(c, "example-invoices", redislock.WithTTL(2*time.Second))
		return l, func() { _ = c.Close(); _ = rdb.Close() }
	}
	ours, closeOurs := newLock()
	defer closeOurs()
	theirs, closeTheirs := newLock()
	defer closeTheirs()

	lease, err := ours.Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = theirs.TryAcquire(ctx)
	fmt.Println("held elsewhere:", errors.Is(err, recipes.ErrLocked))

	next := make(chan recipes.Lease, 1)
	go func() {
		l, err := theirs.Acquire(ctx) // waits: Release hands it the lock
		if err != nil {
			fmt.Println(err)
		}
		next <- l
	}()
	first, _ := lease.Token()
	_ = lease.Release(ctx)
	if lease = <-next; lease == nil {
		return
	}
	second, _ := lease.Token()
	fmt.Println("higher token:", second > first)
	_ = lease.Release(ctx)
	// Output:
	// held elsewhere: true
	// higher token: true
}

// A Redis that asks for authentication and speaks TLS, and an ACL user
// that may use the lock's keys and channels alone: those under its key
// prefix, with the commands ACLRule lists.
func Example_secured() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The operator's side: the user's line in redis.conf (or ACL SETUSER
	// locker on >s3cret ...) grants the rule of the prefix "app:".
	fmt.Println(redislock.ACLRule("app:"))
	addr, caFile, stop := exampleSecureRedis("locker on >s3cret " + redislock.ACLRule("app:")) // your server
	defer stop()

	// The client's side: authentication and TLS are go-redis's options.
	caPEM, err := os.ReadFile(caFile) // your servers' CA
	if err != nil {
		fmt.Println(err)
		return
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	rdb := redis.NewClient(&redis.Options{
		Addr:      addr,
		Username:  "locker",
		Password:  "s3cret",
		TLSConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
	})
	defer rdb.Close()
	c, err := redislock.NewClient(rdb, redislock.WithKeyPrefix("app:"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	l, err := redislock.New(c, "orders", redislock.WithTTL(2*time.Second))
	if err != nil {
		fmt.Println(err)
		return
	}
	lease, err := l.Acquire(ctx) // keys app:{orders}..., grants on app:zkrecipes:redislock:grants:...
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("held")
	fmt.Println(lease.Release(ctx))

	// Without the prefix, the user may not touch the lock's keys: Acquire
	// fails at once, and says why.
	bare, _ := redislock.NewClient(rdb)
	defer bare.Close()
	other, _ := redislock.New(bare, "orders", redislock.WithTTL(2*time.Second))
	_, err = other.Acquire(ctx)
	fmt.Println("refused:", errors.Is(err, recipes.ErrNotAcquired), strings.Contains(err.Error(), "NOPERM"))
	// Output:
	// ~app:* &app:* +evalsha +eval +get +set +del +pexpire +pttl +rpush +lpop +lpos +lset +lrem +lrange +time +info +lastsave +publish +spublish +pubsub|numsub +pubsub|shardnumsub +subscribe +ssubscribe +cluster|slots +command +asking +wait +script|load
	// held
	// <nil>
	// refused: true true
}
