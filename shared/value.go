package shared

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// Sentinels of the package, wrapped with %w.
var (
	// ErrNotCount: a Count's node does not hold 4 bytes (someone else
	// wrote it), so it cannot be read as Curator's count.
	ErrNotCount = errors.New("shared: node does not hold a 4-byte count")
	// ErrRecreated: the node was deleted again each time it was created
	// while a read tried to seed it; the read gave up.
	ErrRecreated = errors.New("shared: node deleted as fast as it was created")
)

// Versioned is a value with the version of the node it was read from
// (Curator's VersionedValue): the version to give TrySet.
type Versioned[T any] struct {
	Value   T
	Version int32
}

// Value is Curator's SharedValue: bytes shared through one persistent
// node, changed by versioned writes. It is safe for concurrent use.
type Value struct {
	c    *session.Client
	path string
	seed []byte
}

// NewValue returns the value at path; the first read creates the node with
// seed when it does not exist. No I/O is done.
func NewValue(c *session.Client, path string, seed []byte) (*Value, error) {
	return newValue("value", c, path, bytes.Clone(seed))
}

func newValue(what string, c *session.Client, path string, seed []byte) (*Value, error) {
	if c == nil {
		return nil, fmt.Errorf("shared: %s: %w: nil session client", what, recipes.ErrInvalidArgument)
	}
	if err := session.ValidatePath(path); err != nil {
		return nil, fmt.Errorf("shared: %s: %w", what, err) // session.ErrInvalidArgument, which is recipes.ErrInvalidArgument
	}
	return &Value{c: c, path: path, seed: seed}, nil
}

// Path is the node's path.
func (v *Value) Path() string { return v.path }

// Get returns the node's data and version (for TrySet), creating the node
// with the seed when it does not exist.
func (v *Value) Get(ctx context.Context) (Versioned[[]byte], error) {
	data, st, _, err := v.read(ctx, false)
	if err != nil {
		return Versioned[[]byte]{}, err
	}
	return Versioned[[]byte]{data, st.Version}, nil
}

// GetW is Get that also leaves a watch on the node (see session.GetW):
// what a recipe that follows the value builds on. Changes does this for
// most callers.
func (v *Value) GetW(ctx context.Context) (Versioned[[]byte], <-chan session.Event, error) {
	data, st, ev, err := v.read(ctx, true)
	if err != nil {
		return Versioned[[]byte]{}, nil, err
	}
	return Versioned[[]byte]{data, st.Version}, ev, nil
}

// TrySet writes data if the node is still at version, and reports false
// when someone wrote since (read again and decide again), as Curator's
// trySetValue. On a lost connection the client's retry of the write may
// find its own write done and report false: read again to know.
func (v *Value) TrySet(ctx context.Context, data []byte, version int32) (bool, error) {
	_, err := v.c.Set(ctx, v.path, data, version)
	switch {
	case errors.Is(err, session.ErrBadVersion):
		return false, nil
	case errors.Is(err, session.ErrNoNode):
		return false, nil // deleted since the read: version is no longer the node's
	case err != nil:
		return false, fmt.Errorf("shared: set %s: %w", v.path, err)
	}
	return true, nil
}

// Set writes data whatever the version, creating the node when it does
// not exist (Curator's setValue).
func (v *Value) Set(ctx context.Context, data []byte) error {
	for range 3 {
		_, err := v.c.Set(ctx, v.path, data, -1)
		if errors.Is(err, session.ErrNoNode) {
			_, err = v.c.Create(ctx, v.path, data, session.Persistent)
			if errors.Is(err, session.ErrNodeExists) {
				continue // created meanwhile: write over it
			}
		}
		if err != nil {
			return fmt.Errorf("shared: set %s: %w", v.path, err)
		}
		return nil
	}
	return fmt.Errorf("shared: set %s: %w", v.path, ErrRecreated)
}

// read reads the node (creating it with the seed), and watches it if
// asked.
func (v *Value) read(ctx context.Context, watch bool) ([]byte, *session.Stat, <-chan session.Event, error) {
	for range 3 {
		var data []byte
		var st *session.Stat
		var ev <-chan session.Event
		var err error
		if watch {
			data, st, ev, err = v.c.GetW(ctx, v.path)
		} else {
			data, st, err = v.c.Get(ctx, v.path)
		}
		if errors.Is(err, session.ErrNoNode) {
			_, err = v.c.Create(ctx, v.path, v.seed, session.Persistent)
			if err == nil || errors.Is(err, session.ErrNodeExists) {
				continue // read what is there now (ours, or another's seed)
			}
		}
		if err != nil {
			return nil, nil, nil, fmt.Errorf("shared: read %s: %w", v.path, err)
		}
		return data, st, ev, nil
	}
	return nil, nil, nil, fmt.Errorf("shared: read %s: %w", v.path, ErrRecreated)
}
