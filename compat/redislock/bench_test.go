package redislock_test

import (
	"context"
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
)

// BenchmarkUncontended: one Acquire and Release per op on one Redis, with
// no trace (the hooks' cost when unset: compare allocs/op with a tree
// before them) and with a trace whose hooks do nothing.
func BenchmarkUncontended(b *testing.B) {
	r := harness.StartRedis(b)
	nop := &locktrace.Trace{
		AcquireStart: func(locktrace.AcquireStartInfo) {},
		AcquireDone:  func(locktrace.AcquireDoneInfo) {},
		LeaseEnd:     func(locktrace.LeaseEndInfo) {},
		Renewal:      func(locktrace.RenewalInfo) {},
	}
	for _, bc := range []struct {
		name string
		ctx  context.Context
	}{
		{"trace=none", context.Background()},
		{"trace=nop", locktrace.WithTrace(context.Background(), nop)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			l := newLock(b, client(b, r.Addr()), "bench")
			once := func() {
				le, err := l.Acquire(bc.ctx)
				if err != nil {
					b.Fatal(err)
				}
				if err := le.Release(bc.ctx); err != nil {
					b.Fatal(err)
				}
			}
			once() // waits out the young server's quiet period
			b.ReportAllocs()
			for b.Loop() {
				once()
			}
		})
	}
}
