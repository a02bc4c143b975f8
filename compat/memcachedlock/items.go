package memcachedlock

import (
	"errors"
	"fmt"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
)

// quiet reports whether the server may have forgotten a holder of the
// lock, from a read of the marker and the quiet item (items, keyed by
// key): the quiet item is there, or the marker is missing. When the
// marker is missing it starts the quiet period: it adds the quiet item,
// then the marker, in that order (a marker without a quiet item would let
// others in, were this client to stop in between). An add that finds the
// item there already is fine: the quiet period then began at least as
// late as the server forgot.
func (l *Lock) quiet(items map[string]*memcache.Item) (bool, error) {
	switch {
	case items[l.quietKey] != nil:
		return true, nil
	case items[l.aliveKey] != nil:
		return false, nil
	}
	alive := &memcache.Item{Key: l.aliveKey, Value: []byte("1")} // never expires
	if l.oldServer() {
		// It has run for longer than a lock can outlive its holder's
		// lease: it forgot nothing a holder still trusts (a flush_all
		// aside, as Redis's FLUSHALL). The key's first use there waits
		// for nothing.
		if err := l.mc.Add(alive); err != nil && !errors.Is(err, memcache.ErrNotStored) {
			return true, fmt.Errorf("write the marker: %w", permanent(err))
		}
		return false, nil
	}
	quiet := &memcache.Item{Key: l.quietKey, Value: []byte("1"), Expiration: l.seconds() + int32(coarseClock/time.Second)}
	if err := l.mc.Add(quiet); err != nil && !errors.Is(err, memcache.ErrNotStored) {
		return true, fmt.Errorf("start the quiet period: %w", permanent(err))
	}
	if err := l.mc.Add(alive); err != nil && !errors.Is(err, memcache.ErrNotStored) {
		return true, fmt.Errorf("write the marker: %w", permanent(err))
	}
	return true, nil
}

// oldServer reports whether the server (WithServerAddr) has run for longer
// than the TTL plus memcached's coarse clock: false when its uptime cannot
// be read, or without an address.
func (l *Lock) oldServer() bool {
	if l.addr == "" {
		return false
	}
	up, err := serverUptime(l.dial, l.addr)
	return err == nil && up > l.ttl+coarseClock+time.Second
}

// readQuiet reads the marker and the quiet item and says whether the
// server is quiet (see quiet).
func (l *Lock) readQuiet() (bool, error) {
	items, err := l.mc.GetMulti([]string{l.aliveKey, l.quietKey})
	if err != nil {
		return false, fmt.Errorf("read the marker: %w", permanent(err))
	}
	return l.quiet(items)
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
			it, err := l.mc.Get(l.key)
			if err != nil {
				return notOurs(err)
			}
			if string(it.Value) != string(id) {
				return ttl.ErrNotOurs
			}
			cas = it.CasID
		}
		err = l.mc.CompareAndSwap(&memcache.Item{Key: l.key, Expiration: -1, CasID: cas})
		if !errors.Is(err, memcache.ErrCASConflict) {
			return notOurs(err)
		}
		cas = 0
	}
	return notOurs(err)
}

// abandon deletes the lock item if its value is id (see deleteOurs),
// trying again after transient errors for abandonTimeout at most, less
// than the TTL: it is the clean-up of an attempt whose answer was lost or
// came too late, and the item expires at its TTL anyway.
func (l *Lock) abandon(id []byte) {
	deadline := time.Now().Add(min(abandonTimeout, l.ttl))
	for pause := firstPoll; ; pause = min(2*pause, MaxPoll) {
		err := l.deleteOurs(id, 0)
		if err == nil || errors.Is(err, ttl.ErrNotOurs) || errors.Is(err, ttl.ErrPermanent) ||
			!time.Now().Add(pause).Before(deadline) {
			return
		}
		time.Sleep(pause)
	}
}
