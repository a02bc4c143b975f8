package memcachedlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
)

// state reads, from items (the marker and the quiet item, read with the
// lock item), whether the server may have forgotten a holder of the lock
// (quiet: the quiet item is there, or the marker is missing, and then it
// starts the quiet period), and the server's start time, which the
// marker gives (0 when it gives none; a Lock with the server's address
// dates a marker that gives none).
func (l *Lock) state(items map[string]*memcache.Item) (quiet bool, start int64, err error) {
	marker := items[l.aliveKey]
	switch {
	case items[l.quietKey] != nil:
		return true, 0, nil
	case marker == nil:
		return l.mark()
	}
	start = markerStart(marker.Value)
	if start == 0 && l.c.addr != "" {
		start, err = l.dateMarker(marker)
	}
	return false, start, err
}

// mark writes the missing marker: the server has forgotten everything
// since it was written (a restart, a flush), or the key was never used
// there. It starts the quiet period first, unless the server (its "stats"
// uptime, WithServerAddr) has run for longer than a lock can outlive its
// holder's lease: then it forgot nothing a holder still trusts (a
// flush_all aside, as Redis's FLUSHALL), and the key's first use waits
// for nothing. It reports whether the server is quiet.
func (l *Lock) mark() (bool, int64, error) {
	if l.c.addr == "" {
		return true, 0, l.startQuiet([]byte(undated))
	}
	start, up, err := l.serverStart()
	if err != nil {
		return true, 0, err
	}
	old := up > l.ttl+coarseClock+time.Second
	value := markerValue(start)
	if old {
		err = l.c.mc.Add(&memcache.Item{Key: l.aliveKey, Value: value}) // never expires
		if errors.Is(err, memcache.ErrNotStored) {
			// Another client's, written meanwhile.
			start, err = l.readStart()
			return false, start, err
		}
		if err != nil {
			return true, 0, fmt.Errorf("write the marker: %w", permanent(err))
		}
	} else if err := l.startQuiet(value); err != nil {
		return true, 0, err
	}
	// A cold restart between the read of the start time and the adds
	// would have put on the new server a marker that gives the old
	// server's start time (and, for an old server, no quiet item): read
	// it again, and take such a marker back.
	again, _, err := l.serverStart()
	if err == nil && again != start {
		err = fmt.Errorf("%w (the server restarted while the marker was written)", errUndated)
	}
	if err != nil {
		// Tried a few times: after a restart, each connection the client
		// kept to the old server fails once.
		ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
		defer cancel()
		if derr := ttl.Retry(ctx, markerTries, func() error { return l.deleteMarker(value) }); derr != nil {
			err = errors.Join(err, fmt.Errorf("take the marker back: %w", derr))
		}
		return true, 0, err
	}
	return !old, start, nil
}

// markerTries bounds the tries to take back a marker written to a server
// that restarted meanwhile.
const markerTries = 4

// startQuiet starts the quiet period: it adds the quiet item, then the
// marker (with value), in that order (a marker without a quiet item would
// let others in, were this client to stop in between). An add that finds
// the item there already is fine: the quiet period then began at least as
// late as the server forgot.
func (l *Lock) startQuiet(value []byte) error {
	quiet := &memcache.Item{Key: l.quietKey, Value: []byte("1"), Expiration: l.seconds() + int32(coarseClock/time.Second)}
	if err := l.c.mc.Add(quiet); err != nil && !errors.Is(err, memcache.ErrNotStored) {
		return fmt.Errorf("start the quiet period: %w", permanent(err))
	}
	alive := &memcache.Item{Key: l.aliveKey, Value: value} // never expires
	if err := l.c.mc.Add(alive); err != nil && !errors.Is(err, memcache.ErrNotStored) {
		return fmt.Errorf("write the marker: %w", permanent(err))
	}
	return nil
}

// deleteMarker deletes the marker if its value is value (compare and
// delete): the next use of the lock writes it again.
func (l *Lock) deleteMarker(value []byte) error {
	it, err := l.c.mc.Get(l.aliveKey)
	switch {
	case missing(err):
		return nil
	case err != nil:
		return permanent(err)
	case string(it.Value) != string(value):
		return nil
	}
	err = l.c.mc.CompareAndSwap(&memcache.Item{Key: l.aliveKey, Expiration: -1, CasID: it.CasID})
	if missing(err) || errors.Is(err, memcache.ErrCASConflict) {
		return nil // gone, or written again since
	}
	return permanent(err)
}

// readQuiet reads the marker and the quiet item and says whether the
// server is quiet (see state; a marker that gives no start time is left
// so).
func (l *Lock) readQuiet() (bool, error) {
	items, err := l.c.mc.GetMulti([]string{l.aliveKey, l.quietKey})
	switch {
	case err != nil:
		return false, fmt.Errorf("read the marker: %w", permanent(err))
	case items[l.quietKey] != nil:
		return true, nil
	case items[l.aliveKey] != nil:
		return false, nil
	}
	quiet, _, err := l.mark()
	return quiet, err
}

// deleteOurs deletes the lock item if its value is id, by compare and
// delete from cas (0: read it first): never another holder's. A changed
// CAS with our value is a write of ours whose answer was lost: it reads
// the CAS again. The error is ttl.ErrNotOurs when the item is gone (then
// also memcache.ErrCacheMiss) or someone else's.
func (l *Lock) deleteOurs(id []byte, cas uint64) error {
	var err error
	for range 3 {
		if cas == 0 {
			it, err := l.c.mc.Get(l.key)
			if err != nil {
				return notOurs(err)
			}
			if string(it.Value) != string(id) {
				return ttl.ErrNotOurs
			}
			cas = it.CasID
		}
		err = l.c.mc.CompareAndSwap(&memcache.Item{Key: l.key, Expiration: -1, CasID: cas})
		if !errors.Is(err, memcache.ErrCASConflict) {
			return notOurs(err)
		}
		cas = 0
	}
	return notOurs(err)
}
