package counter

import (
	"context"
	"fmt"

	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/shared"
)

// Int is Curator's DistributedAtomicInteger: an int32 in one node, 4
// bytes, big-endian (a shared.Count's bytes, so both can share a node); an
// absent or empty node reads as 0. It is safe for concurrent use.
// Additions wrap around as Java's int does.
type Int struct{ n number[int32] }

// NewInt returns the counter at path. No I/O is done.
func NewInt(c *session.Client, path string, opts ...Option) (*Int, error) {
	e, err := newEngine("int", c, path, opts)
	if err != nil {
		return nil, err
	}
	return &Int{number[int32]{e, shared.EncodeCount, decodeInt}}, nil
}

// Path is the counter's node.
func (i *Int) Path() string { return i.n.e.path }

// Get returns the value (0 when the node is absent or empty).
func (i *Int) Get(ctx context.Context) (int32, error) { return i.n.get(ctx) }

// Add adds delta (Curator's add; subtract is a negative delta). See the
// package doc for how, and what an error means.
func (i *Int) Add(ctx context.Context, delta int32) (Result[int32], error) {
	return i.n.update(ctx, func(v int32) int32 { return v + delta })
}

// Increment adds 1.
func (i *Int) Increment(ctx context.Context) (Result[int32], error) { return i.Add(ctx, 1) }

// Decrement subtracts 1.
func (i *Int) Decrement(ctx context.Context) (Result[int32], error) { return i.Add(ctx, -1) }

// TrySet sets value as a change, optimistic then under the lock (Curator's
// trySet): Pre is the value it replaced.
func (i *Int) TrySet(ctx context.Context, value int32) (Result[int32], error) {
	return i.n.update(ctx, func(int32) int32 { return value })
}

// CompareAndSet sets value if the counter holds expected, in one try
// (Curator's compareAndSet): see Long.CompareAndSet.
func (i *Int) CompareAndSet(ctx context.Context, expected, value int32) (Result[int32], error) {
	return i.n.compareAndSet(ctx, expected, value)
}

// Set writes value whatever the counter holds (Curator's forceSet).
func (i *Int) Set(ctx context.Context, value int32) error {
	return i.n.e.forceSet(ctx, shared.EncodeCount(value))
}

// Initialize creates the node with value if it does not exist: see
// Long.Initialize.
func (i *Int) Initialize(ctx context.Context, value int32) (bool, error) {
	return i.n.e.initialize(ctx, shared.EncodeCount(value))
}

func decodeInt(data []byte) (int32, error) {
	if len(data) == 0 {
		return 0, nil
	}
	n, err := shared.DecodeCount(data)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrBadData, err)
	}
	return n, nil
}
