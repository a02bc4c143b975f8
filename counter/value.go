package counter

import (
	"bytes"
	"context"

	"github.com/zkrecipes/zkrecipes/session"
)

// Value is Curator's DistributedAtomicValue: bytes in one node, changed
// atomically; an absent node reads as nil. It is safe for concurrent use.
type Value struct{ e *engine }

// NewValue returns the value at path. No I/O is done.
func NewValue(c *session.Client, path string, opts ...Option) (*Value, error) {
	e, err := newEngine("value", c, path, opts)
	if err != nil {
		return nil, err
	}
	return &Value{e}, nil
}

// Path is the value's node.
func (v *Value) Path() string { return v.e.path }

// Get returns the node's bytes (nil when it is absent).
func (v *Value) Get(ctx context.Context) ([]byte, error) {
	if err := checkContext(ctx); err != nil {
		return nil, err
	}
	data, _, _, err := v.e.read(ctx)
	return data, err
}

// TrySet writes data as a change, optimistic then under the lock
// (Curator's trySet): Pre is what it replaced.
func (v *Value) TrySet(ctx context.Context, data []byte) (Result[[]byte], error) {
	data = bytes.Clone(data)
	pre, _, err := v.e.apply(ctx, func([]byte) ([]byte, error) { return data, nil })
	return Result[[]byte]{pre, data}, err
}

// CompareAndSet writes data if the node holds expected (an absent or empty
// node holds nil, and is created), in one try (Curator's compareAndSet):
// see Long.CompareAndSet.
func (v *Value) CompareAndSet(ctx context.Context, expected, data []byte) (Result[[]byte], error) {
	data = bytes.Clone(data)
	pre, err := v.e.compareAndSet(ctx, func(pre []byte) (bool, error) { return bytes.Equal(pre, expected), nil }, data)
	return Result[[]byte]{pre, data}, err
}

// Set writes data whatever the node holds (Curator's forceSet).
func (v *Value) Set(ctx context.Context, data []byte) error { return v.e.forceSet(ctx, data) }

// Initialize creates the node with data if it does not exist: see
// Long.Initialize.
func (v *Value) Initialize(ctx context.Context, data []byte) (bool, error) {
	return v.e.initialize(ctx, data)
}
