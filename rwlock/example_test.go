package rwlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/session"
)

func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := session.Connect(ctx, zktest.SharedForExample(), session.WithLogger(nil))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	other, _ := session.Connect(ctx, zktest.SharedForExample(), session.WithLogger(nil))
	defer other.Close()

	l, _ := rwlock.New(client, "/locks/example-catalog") // no I/O yet
	theirs, _ := rwlock.New(other, "/locks/example-catalog")

	// Readers share.
	r1, _ := l.ReadLock().Acquire(ctx)
	r2, err := theirs.ReadLock().TryAcquire(ctx)
	fmt.Println("second reader:", err)
	_, err = theirs.WriteLock().TryAcquire(ctx)
	fmt.Println("writer while reading:", errors.Is(err, recipes.ErrLocked))
	_ = r1.Release(ctx)
	_ = r2.Release(ctx)

	// A writer may downgrade: take the read lock in its call chain, then
	// let the write lock go; no writer can slip in between.
	w, _ := l.WriteLock().Acquire(ctx)
	r, err := l.ReadLock().Acquire(w.Context())
	fmt.Println("downgrade:", err)
	_ = w.Release(ctx)
	// The other way round can never succeed, and says so at once.
	_, err = l.WriteLock().Acquire(r.Context())
	fmt.Println("upgrade:", errors.Is(err, rwlock.ErrUpgrade))
	_ = r.Release(ctx)
	// Output:
	// second reader: <nil>
	// writer while reading: true
	// downgrade: <nil>
	// upgrade: true
}
