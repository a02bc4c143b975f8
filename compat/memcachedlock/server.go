package memcachedlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
)

// server is a holding's lock item: its value and the CAS of our last write.
// Its calls run one at a time (mu), also when an abandoned one is still out.
type server struct {
	l  *Lock
	id []byte

	mu  sync.Mutex
	cas uint64
}

// Renew writes the item again, by compare-and-swap with the CAS we hold,
// with a fresh TTL, and reads the new CAS back.
func (s *server) Renew(ctx context.Context) error {
	return call(ctx, func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		err := s.l.mc.CompareAndSwap(&memcache.Item{Key: s.l.key, Value: s.id, Expiration: int32(s.l.ttl / time.Second), CasID: s.cas})
		if err != nil {
			return notOurs(err)
		}
		it, err := s.l.mc.Get(s.l.key)
		if err != nil {
			return notOurs(err)
		}
		if string(it.Value) != string(s.id) {
			return ttl.ErrNotOurs
		}
		s.cas = it.CasID
		return nil
	})
}

// Free deletes the item by compare-and-swap with the CAS we hold and an
// expiry of -1: only while it is still ours.
func (s *server) Free(ctx context.Context) error {
	return call(ctx, func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		return notOurs(s.l.mc.CompareAndSwap(&memcache.Item{Key: s.l.key, Expiration: -1, CasID: s.cas}))
	})
}

// notOurs maps memcached's "changed" or "gone" to ttl.ErrNotOurs.
func notOurs(err error) error {
	if errors.Is(err, memcache.ErrCASConflict) || errors.Is(err, memcache.ErrNotStored) || errors.Is(err, memcache.ErrCacheMiss) {
		return fmt.Errorf("%w: %w", ttl.ErrNotOurs, err)
	}
	return err
}

// call runs op, which takes no context, and returns ctx's error when ctx
// ends first (op goes on, and its result is dropped).
func call(ctx context.Context, op func() error) error {
	res := make(chan error, 1)
	go func() { res <- op() }()
	select {
	case err := <-res:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
