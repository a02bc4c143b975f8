package counter

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/zkrecipes/zkrecipes/session"
)

// Long is Curator's DistributedAtomicLong: an int64 in one node, 8 bytes,
// big-endian; an absent or empty node reads as 0. It is safe for
// concurrent use. Additions wrap around as Java's long does.
type Long struct{ n number[int64] }

// NewLong returns the counter at path. No I/O is done.
func NewLong(c *session.Client, path string, opts ...Option) (*Long, error) {
	e, err := newEngine("long", c, path, opts)
	if err != nil {
		return nil, err
	}
	return &Long{number[int64]{e, encodeLong, decodeLong}}, nil
}

// Path is the counter's node.
func (l *Long) Path() string { return l.n.e.path }

// Get returns the value (0 when the node is absent or empty).
func (l *Long) Get(ctx context.Context) (int64, error) { return l.n.get(ctx) }

// Add adds delta (Curator's add; subtract is a negative delta). See the
// package doc for how, and what an error means.
func (l *Long) Add(ctx context.Context, delta int64) (Result[int64], error) {
	return l.n.update(ctx, func(v int64) int64 { return v + delta })
}

// Increment adds 1.
func (l *Long) Increment(ctx context.Context) (Result[int64], error) { return l.Add(ctx, 1) }

// Decrement subtracts 1.
func (l *Long) Decrement(ctx context.Context) (Result[int64], error) { return l.Add(ctx, -1) }

// TrySet sets value as a change, optimistic then under the lock (Curator's
// trySet): Pre is the value it replaced.
func (l *Long) TrySet(ctx context.Context, value int64) (Result[int64], error) {
	return l.n.update(ctx, func(int64) int64 { return value })
}

// CompareAndSet sets value if the counter holds expected, in one try
// (Curator's compareAndSet, which neither retries nor takes the lock):
// ErrNotApplied when it holds another value (Pre) or another writer wrote
// between the read and the write. An absent node holds 0 and is created
// (Curator's compareAndSet fails on an absent node, although its get
// reads 0 there).
func (l *Long) CompareAndSet(ctx context.Context, expected, value int64) (Result[int64], error) {
	return l.n.compareAndSet(ctx, expected, value)
}

// Set writes value whatever the counter holds (Curator's forceSet).
func (l *Long) Set(ctx context.Context, value int64) error {
	return l.n.e.forceSet(ctx, encodeLong(value))
}

// Initialize creates the node with value if it does not exist, and
// reports false when it does (Curator's initialize). After a lost reply
// the client's retry may find its own create and report false.
func (l *Long) Initialize(ctx context.Context, value int64) (bool, error) {
	return l.n.e.initialize(ctx, encodeLong(value))
}

func encodeLong(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

func decodeLong(data []byte) (int64, error) {
	switch len(data) {
	case 0:
		return 0, nil
	case 8:
		return int64(binary.BigEndian.Uint64(data)), nil
	}
	return 0, fmt.Errorf("%w: %d bytes, not 8 (a long)", ErrBadData, len(data))
}
