package multilock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/multilock"
	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/znode"
)

// exampleServers starts (once) the ZooKeeper the examples use; in your code
// these are your ensemble's addresses.
var exampleServers = zktest.SharedForExample

// A transfer between two accounts holds both accounts' locks. The members
// may be of any backends; here both are ZooKeeper mutexes.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := session.Connect(ctx, exampleServers(), session.WithLogger(nil))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	from, _ := mutex.New(client, "/locks/example-account-17")
	to, _ := mutex.New(client, "/locks/example-account-42")
	// Every process lists the accounts in the same order (here, by number).
	m, err := multilock.New(from, to) // no I/O yet
	if err != nil {
		fmt.Println(err)
		return
	}
	lease, err := m.Acquire(ctx) // both, or neither
	if err != nil {
		fmt.Println(err)
		return
	}
	// Work with lease.Context(): it ends as soon as either member's lease
	// does (a session suspended or lost), with the member named in its cause.
	work := lease.Context()

	// No token of its own: fence each account with its own lock's token.
	_, ok := lease.Token()
	fmt.Println("token of the MultiLock:", ok)
	for i, member := range lease.(*multilock.Lease).Leases() {
		_, ok := member.Token()
		fmt.Printf("token of member %d: %v\n", i, ok)
	}

	// Code under the lease may take one account alone: it re-enters.
	inner, err := to.Acquire(work)
	fmt.Println("member re-entered:", err == nil)
	fmt.Println(inner.Release(ctx), lease.Release(ctx))
	fmt.Println("lease ended:", context.Cause(work))
	// Output:
	// token of the MultiLock: false
	// token of member 0: true
	// token of member 1: true
	// member re-entered: true
	// <nil> <nil>
	// lease ended: recipes: lease released
}

// Under recipes.WithLock, fn finds the members' leases through its context.
func ExampleMultiLock_HeldLeases() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, _ := session.Connect(ctx, exampleServers(), session.WithLogger(nil))
	defer a.Close()
	b, _ := session.Connect(ctx, exampleServers(), session.WithLogger(nil))
	defer b.Close()
	newMulti := func(c *session.Client) *multilock.MultiLock {
		x, _ := mutex.New(c, "/locks/example-held-x")
		y, _ := mutex.New(c, "/locks/example-held-y")
		m, _ := multilock.New(x, y)
		return m
	}
	ma, mb := newMulti(a), newMulti(b)

	err := recipes.WithLock(ctx, ma, func(ctx context.Context) error {
		fmt.Println("members held:", len(ma.HeldLeases(ctx)))
		_, err := mb.TryAcquire(ctx) // another contender, on its own session
		fmt.Println("the other contender:", errors.Is(err, recipes.ErrLocked))
		return nil
	})
	fmt.Println(err)
	// Output:
	// members held: 2
	// the other contender: true
	// <nil>
}

// TryAcquire takes every member or none: when one is held elsewhere, it
// releases those it took, and the error says which member it was.
func ExampleMultiLock_TryAcquire() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, _ := session.Connect(ctx, exampleServers(), session.WithLogger(nil))
	defer a.Close()
	b, _ := session.Connect(ctx, exampleServers(), session.WithLogger(nil))
	defer b.Close()
	from, _ := mutex.New(a, "/locks/example-account-7")
	to, _ := mutex.New(a, "/locks/example-account-8")
	m, _ := multilock.New(from, to)
	theirs, _ := mutex.New(b, "/locks/example-account-8") // another process's lock of one account

	held, _ := theirs.Acquire(ctx)
	_, err := m.TryAcquire(ctx)
	fmt.Println("held elsewhere:", errors.Is(err, recipes.ErrLocked))
	var me *multilock.MemberError
	if errors.As(err, &me) {
		fmt.Println("member:", me.Index, me.Op)
	}
	_ = held.Release(ctx)

	lease, err := m.TryAcquire(ctx) // nothing was left held: both are free now
	fmt.Println("after their release:", err)
	_ = lease.Release(ctx)
	// Output:
	// held elsewhere: true
	// member: 1 TryAcquire
	// after their release: <nil>
}

// Each member fences its own resource. A ZooKeeper member's lease is a
// znode.Lease, and its GuardedMulti can check the other members' lock nodes
// too: here one transaction writes both accounts, and only while both locks
// are held.
func ExampleLease_Leases() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := session.Connect(ctx, exampleServers(), session.WithLogger(nil))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	for _, account := range []string{"/example-accounts/3", "/example-accounts/4"} {
		if _, err := client.Create(ctx, account, []byte("100"), 0); err != nil && !errors.Is(err, session.ErrNodeExists) {
			fmt.Println(err)
			return
		}
	}
	from, _ := mutex.New(client, "/locks/example-account-3")
	to, _ := mutex.New(client, "/locks/example-account-4")
	m, _ := multilock.New(from, to)

	lease, err := m.Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	members := lease.(*multilock.Lease).Leases() // in the order given to New
	debit, credit := members[0].(znode.Lease), members[1].(znode.Lease)
	_, err = debit.GuardedMulti(ctx,
		session.CheckOp(credit.Node(), -1), // the other lock's node must exist too
		session.SetOp("/example-accounts/3", []byte("90"), -1),
		session.SetOp("/example-accounts/4", []byte("110"), -1))
	fmt.Println("transfer:", err)
	fmt.Println(lease.Release(ctx))

	_, err = debit.GuardedMulti(ctx, session.SetOp("/example-accounts/3", []byte("0"), -1))
	fmt.Println("after release:", errors.Is(err, session.ErrGuardFailed))
	// Output:
	// transfer: <nil>
	// <nil>
	// after release: true
}
