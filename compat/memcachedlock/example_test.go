package memcachedlock_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
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
	// WithServerAddr is required, or WithoutEvictionCheck: the first
	// Acquire checks that memcached runs with -M, so that it cannot evict a
	// held lock.
	c, err := memcachedlock.NewClient(mc, memcachedlock.WithServerAddr(addr)) // no I/O yet
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close() // waits for its clean-ups in the background
	// Every process that shares the lock uses the same TTL. A new server
	// grants nothing for its first TTL + 2 s: the shortest TTL here, so the
	// example is quick.
	l, err := memcachedlock.New(c, "example-orders", memcachedlock.WithTTL(memcachedlock.MinTTL))
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
	oc, _ := memcachedlock.NewClient(other, memcachedlock.WithServerAddr(addr))
	defer oc.Close()
	theirs, _ := memcachedlock.New(oc, "example-orders", memcachedlock.WithTTL(memcachedlock.MinTTL))
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

// NewClient refuses a Client that has neither WithServerAddr nor
// WithoutEvictionCheck, and New a TTL under MinTTL: memcached counts whole
// seconds and may expire an item up to 2 s early.
func ExampleNew() {
	mc := memcache.New("127.0.0.1:11211")
	_, err := memcachedlock.NewClient(mc)
	fmt.Println("no eviction check:", errors.Is(err, recipes.ErrInvalidArgument))
	c, err := memcachedlock.NewClient(mc, memcachedlock.WithServerAddr("127.0.0.1:11211"))
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = memcachedlock.New(c, "example-jobs", memcachedlock.WithTTL(time.Second))
	fmt.Println("TTL under MinTTL:", errors.Is(err, recipes.ErrInvalidArgument))
	_, err = memcachedlock.New(c, "example-jobs", memcachedlock.WithTTL(memcachedlock.MinTTL))
	fmt.Println("with the server's address:", err)
	// Output:
	// no eviction check: true
	// TTL under MinTTL: true
	// with the server's address: <nil>
}

// A memcached that speaks TLS and asks each connection to authenticate
// (memcached -Z, -Y): both are the client's, a DialContext that makes
// every connection of gomemcache's pool (and of the lock's eviction
// check), and the lock's items are kept under a key prefix.
func Example_secured() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addr, caFile, stop := exampleSecureMemcached(map[string]string{"locker": "s3cret"}) // your server
	defer stop()

	caPEM, err := os.ReadFile(caFile) // your server's CA
	if err != nil {
		fmt.Println(err)
		return
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	tlsDialer := &tls.Dialer{Config: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}
	mc := memcache.New(addr)
	defer mc.Close()
	mc.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := tlsDialer.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		// memcached's ASCII authentication: a connection's first command
		// is a "set" of "user password", answered STORED. memcached sends
		// nothing more until asked, so the reader keeps nothing of what
		// gomemcache reads next.
		deadline, _ := ctx.Deadline()
		_ = c.SetDeadline(deadline)
		cred := "locker s3cret"
		_, err = fmt.Fprintf(c, "set auth 0 0 %d\r\n%s\r\n", len(cred), cred)
		reply := ""
		if err == nil {
			reply, err = bufio.NewReader(c).ReadString('\n')
		}
		if err == nil && reply != "STORED\r\n" {
			err = fmt.Errorf("memcached authentication refused: %s", strings.TrimSpace(reply))
		}
		if err != nil {
			_ = c.Close()
			return nil, &net.OpError{Op: "dial", Net: network, Addr: c.RemoteAddr(), Err: err} // a dial that failed
		}
		_ = c.SetDeadline(time.Time{})
		return c, nil
	}

	lc, err := memcachedlock.NewClient(mc,
		memcachedlock.WithKeyPrefix("app:"), // the items app:orders, app:orders:alive, app:orders:quiet
		memcachedlock.WithServerAddr(addr))  // the check connects with mc.DialContext
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lc.Close()
	l, err := memcachedlock.New(lc, "orders", memcachedlock.WithTTL(memcachedlock.MinTTL))
	if err != nil {
		fmt.Println(err)
		return
	}
	lease, err := l.Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("held:", l.Key())
	fmt.Println(lease.Release(ctx))
	// Output:
	// held: app:orders
	// <nil>
}
