package semaphore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// SharedCount is Curator's SharedCount: an integer shared through a
// persistent node holding it as 4 bytes, big-endian, changed by versioned
// writes, so that concurrent writers cannot lose each other's change.
type SharedCount struct {
	c    *session.Client
	path string
	seed int32
}

// NewSharedCount returns the count at path; the first Get creates it with
// seed when it does not exist. No I/O is done.
func NewSharedCount(c *session.Client, path string, seed int) (*SharedCount, error) {
	if c == nil {
		return nil, fmt.Errorf("semaphore: %w: nil session client", recipes.ErrInvalidArgument)
	}
	if err := session.ValidatePath(path); err != nil {
		return nil, fmt.Errorf("semaphore: %w", err) // session.ErrInvalidArgument, which is recipes.ErrInvalidArgument
	}
	if seed < math.MinInt32 || seed > math.MaxInt32 {
		return nil, fmt.Errorf("semaphore: %w: seed %d does not fit in 32 bits", recipes.ErrInvalidArgument, seed)
	}
	return &SharedCount{c: c, path: path, seed: int32(seed)}, nil
}

// Get returns the value and the version of the node that holds it (for
// TrySet).
func (sc *SharedCount) Get(ctx context.Context) (value int, version int32, err error) {
	v, st, _, err := sc.get(ctx, false)
	if err != nil {
		return 0, 0, err
	}
	return v, st.Version, nil
}

// TrySet writes value if the node is still at version: false when someone
// wrote since (read again and decide again).
func (sc *SharedCount) TrySet(ctx context.Context, value int, version int32) (bool, error) {
	if value < math.MinInt32 || value > math.MaxInt32 {
		return false, fmt.Errorf("semaphore: %w: %d does not fit in 32 bits", recipes.ErrInvalidArgument, value)
	}
	_, err := sc.c.Set(ctx, sc.path, encode(int32(value)), version)
	if errors.Is(err, session.ErrBadVersion) {
		return false, nil
	}
	return err == nil, err
}

// get reads the count (creating it with the seed), and watches it if asked.
func (sc *SharedCount) get(ctx context.Context, watch bool) (int, *session.Stat, <-chan session.Event, error) {
	for range 3 {
		var data []byte
		var st *session.Stat
		var ev <-chan session.Event
		var err error
		if watch {
			data, st, ev, err = sc.c.GetW(ctx, sc.path)
		} else {
			data, st, err = sc.c.Get(ctx, sc.path)
		}
		if errors.Is(err, session.ErrNoNode) {
			_, err = sc.c.Create(ctx, sc.path, encode(sc.seed), session.Persistent)
			if err == nil || errors.Is(err, session.ErrNodeExists) {
				continue
			}
		}
		if err != nil {
			return 0, nil, nil, err
		}
		if len(data) != 4 {
			return 0, nil, nil, fmt.Errorf("semaphore: shared count %s holds %d bytes, not a 4-byte integer", sc.path, len(data))
		}
		return int(int32(binary.BigEndian.Uint32(data))), st, ev, nil
	}
	return 0, nil, nil, fmt.Errorf("semaphore: shared count %s: created and deleted again meanwhile", sc.path)
}

// watch is the semaphore's MaxLeases: the value, and a watch on it.
func (sc *SharedCount) watch(ctx context.Context) (int, <-chan session.Event, error) {
	v, _, ev, err := sc.get(ctx, true)
	return v, ev, err
}

func encode(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }
