package exclusive_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := session.Connect(ctx, zktest.SharedForExample(), session.WithLogger(nil))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.Close()
	b, _ := session.Connect(ctx, zktest.SharedForExample(), session.WithLogger(nil))
	defer b.Close()

	la, _ := exclusive.New(a, "/locks/example-cleanup") // the node is /locks/example-cleanup/lock
	lb, _ := exclusive.New(b, "/locks/example-cleanup")

	lease, _ := la.Acquire(ctx)
	_, err = lb.TryAcquire(ctx)
	fmt.Println("held elsewhere:", errors.Is(err, recipes.ErrLocked))
	// Work under lease.Context(); fence writes with lease.Token()'s token.
	fmt.Println(lease.Release(ctx))
	lease, err = lb.TryAcquire(ctx)
	fmt.Println("after release:", err)
	_ = lease.Release(ctx)
	// Output:
	// held elsewhere: true
	// <nil>
	// after release: <nil>
}
