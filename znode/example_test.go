package znode_test

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/znode"
)

// Every lease of a ZooKeeper lock is a znode.Lease: the lock node behind
// it, and the session that owns the node.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := session.Connect(ctx, exampleServers(), session.WithLogger(nil))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	m, _ := mutex.New(client, "/locks/example-ledger")

	lease, err := m.Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	// Work with lease.Context(): it ends the moment the session can no
	// longer be trusted.
	zl := lease.(znode.Lease)
	node := zl.Node() // a path: "/locks/example-ledger/_c_<uuid>-lock-<seq>"
	fmt.Println("under the lock path:", strings.HasPrefix(node, "/locks/example-ledger/"))
	fmt.Println("owned by our session:", zl.SessionID() == client.CurrentSession().ID())
	child, ok := znode.ParseChild(path.Base(node), mutex.LockName) // it takes the name
	fmt.Println("queue entry:", child.Kind, ok)
	_ = lease.Release(ctx)
	// Output:
	// under the lock path: true
	// owned by our session: true
	// queue entry: lock- true
}

// A write guarded by the lock node: applied, in one transaction with a
// check of the node, only while the lock is held. A holder that lost its
// session cannot write late.
func ExampleLease_GuardedMulti() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := session.Connect(ctx, exampleServers(), session.WithLogger(nil))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	const balance = "/example-ledger/balance"
	if _, err := client.Create(ctx, balance, []byte("0"), 0); err != nil && !errors.Is(err, session.ErrNodeExists) {
		fmt.Println(err)
		return
	}
	m, _ := mutex.New(client, "/locks/example-balance")

	lease, err := m.Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	zl := lease.(znode.Lease)
	_, err = zl.GuardedMulti(ctx, session.SetOp(balance, []byte("100"), -1))
	fmt.Println("while held:", err)
	_ = lease.Release(ctx)

	_, err = zl.GuardedMulti(ctx, session.SetOp(balance, []byte("-1"), -1))
	fmt.Println("after release:", errors.Is(err, session.ErrGuardFailed))
	data, _, _ := client.Get(ctx, balance)
	fmt.Println("balance:", string(data))
	// Output:
	// while held: <nil>
	// after release: true
	// balance: 100
}

// Participants lists a lock's queue, the holder first; Data is what each
// stored (mutex.WithData).
func ExampleParticipant() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := session.Connect(ctx, exampleServers(), session.WithLogger(nil))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.Close()
	b, _ := session.Connect(ctx, exampleServers(), session.WithLogger(nil))
	defer b.Close()
	ma, _ := mutex.New(a, "/locks/example-queue", mutex.WithData([]byte("worker-a")))
	mb, _ := mutex.New(b, "/locks/example-queue", mutex.WithData([]byte("worker-b")))

	lease, err := ma.Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	waiter := make(chan recipes.Lease, 1)
	go func() {
		l, err := mb.Acquire(ctx) // queues behind worker-a
		if err != nil {
			fmt.Println(err)
		}
		waiter <- l
	}()

	var queue []znode.Participant
	for len(queue) < 2 && ctx.Err() == nil { // until worker-b has queued
		queue, _ = ma.Participants(ctx)
		time.Sleep(10 * time.Millisecond)
	}
	for _, p := range queue {
		fmt.Printf("%s: holder %v, kind %s\n", p.Data, p.Holder, p.Kind)
	}

	_ = lease.Release(ctx)
	if next := <-waiter; next != nil {
		_ = next.Release(ctx)
	}
	// Output:
	// worker-a: holder true, kind lock-
	// worker-b: holder false, kind lock-
}

// Curator's revocation: a process that wants a revocable lock asks its
// holder, found in the queue, to let go. The holder decides.
func ExampleRevoke() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := session.Connect(ctx, exampleServers(), session.WithLogger(nil))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.Close()
	b, _ := session.Connect(ctx, exampleServers(), session.WithLogger(nil))
	defer b.Close()
	ma, _ := mutex.New(a, "/locks/example-reindex", mutex.WithRevocable())
	mb, _ := mutex.New(b, "/locks/example-reindex", mutex.WithRevocable())

	lease, err := ma.Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	zl := lease.(znode.Lease)

	// The other process finds the holder and asks it, by its node's path.
	queue, _ := mb.Participants(ctx)
	fmt.Println("holder found:", len(queue) == 1 && queue[0].Holder)
	fmt.Println("revoke:", znode.Revoke(ctx, b, queue[0].Path))

	// The holder is told, and lets go.
	select {
	case <-zl.Revoked():
		fmt.Println("asked to release:", lease.Release(ctx))
	case <-lease.Done(): // the lock was lost meanwhile
		fmt.Println(lease.Err())
	}
	next, err := mb.TryAcquire(ctx)
	fmt.Println("the other process holds it:", err)
	if err == nil {
		_ = next.Release(ctx)
	}
	// Output:
	// holder found: true
	// revoke: <nil>
	// asked to release: <nil>
	// the other process holds it: <nil>
}
