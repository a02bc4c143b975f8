package shared

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// Count is Curator's SharedCount: an integer shared through one persistent
// node holding it as 4 bytes, big-endian, signed, changed by versioned
// writes so that concurrent writers cannot lose each other's change. It is
// a Value read and written as an int32; it is safe for concurrent use.
type Count struct {
	v *Value
}

// NewCount returns the count at path; the first read creates the node
// with seed when it does not exist. No I/O is done.
func NewCount(c *session.Client, path string, seed int) (*Count, error) {
	if err := fits("seed", seed); err != nil {
		return nil, err
	}
	v, err := newValue("count", c, path, EncodeCount(int32(seed)))
	if err != nil {
		return nil, err
	}
	return &Count{v}, nil
}

// Path is the node's path.
func (c *Count) Path() string { return c.v.path }

// Get returns the count and the version of its node (for TrySet).
func (c *Count) Get(ctx context.Context) (value int, version int32, err error) {
	got, err := c.v.Get(ctx)
	if err != nil {
		return 0, 0, err
	}
	n, err := c.decode(got.Value)
	return n, got.Version, err
}

// GetW is Get that also leaves a watch on the node (session.GetW): what a
// recipe that follows the count builds on (the semaphore's maximum).
// Changes does this for most callers.
func (c *Count) GetW(ctx context.Context) (value int, version int32, ev <-chan session.Event, err error) {
	got, ev, err := c.v.GetW(ctx)
	if err != nil {
		return 0, 0, nil, err
	}
	n, err := c.decode(got.Value)
	return n, got.Version, ev, err
}

// TrySet writes value if the node is still at version, and reports false
// when someone wrote since (read again and decide again), as Curator's
// trySetCount. As Value.TrySet, a false after a lost connection may hide
// its own write: read again to know.
func (c *Count) TrySet(ctx context.Context, value int, version int32) (bool, error) {
	if err := fits("value", value); err != nil {
		return false, err
	}
	return c.v.TrySet(ctx, EncodeCount(int32(value)), version)
}

// Set writes value whatever the version (Curator's setCount).
func (c *Count) Set(ctx context.Context, value int) error {
	if err := fits("value", value); err != nil {
		return err
	}
	return c.v.Set(ctx, EncodeCount(int32(value)))
}

func (c *Count) decode(data []byte) (int, error) {
	n, err := DecodeCount(data)
	if err != nil {
		return 0, fmt.Errorf("shared: count %s: %w", c.v.path, err)
	}
	return int(n), nil
}

// EncodeCount is Curator's bytes for a count: 4 bytes, big-endian.
func EncodeCount(n int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(n)) }

// DecodeCount reads Curator's bytes for a count; ErrNotCount unless there
// are exactly 4.
func DecodeCount(data []byte) (int32, error) {
	if len(data) != 4 {
		return 0, fmt.Errorf("%w: it holds %d bytes", ErrNotCount, len(data))
	}
	return int32(binary.BigEndian.Uint32(data)), nil
}

func fits(what string, n int) error {
	if n < math.MinInt32 || n > math.MaxInt32 {
		return fmt.Errorf("shared: count: %w: %s %d does not fit in 32 bits", recipes.ErrInvalidArgument, what, n)
	}
	return nil
}
