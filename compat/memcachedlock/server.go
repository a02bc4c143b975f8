package memcachedlock

import (
	"context"
	"errors"
	"fmt"
	"sync"

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

// errPutBack: the lock item, put back while the server is quiet, was
// found taken by a waiter, which lets it go at once (it sees the quiet
// period too); the renewal tries again.
var errPutBack = errors.New("the lock item is briefly held by a waiter of the quiet period")

// Renew writes the item again, by compare-and-swap with the CAS we hold,
// with a fresh TTL, and reads the new CAS back. An item gone while the
// server is quiet (a restart, a flush) is put back. The watchdog tries
// again after transient errors (a connection broken by a restart, a
// timeout) until the lease's deadline. Calls run one at a time, also when
// an abandoned one is still out.
func (s *server) Renew(ctx context.Context) error {
	return s.l.call(ctx, func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.renew(ctx)
	})
}

// renew tries a renewal once.
func (s *server) renew(ctx context.Context) error {
	l := s.l
	err := l.c.mc.CompareAndSwap(&memcache.Item{Key: l.key, Value: s.id, Expiration: l.seconds(), CasID: s.cas})
	switch {
	case missing(err):
		return s.putBack(ctx)
	case errors.Is(err, memcache.ErrCASConflict):
		// Still ours if it holds our value: a renewal of ours whose
		// answer was lost. Then try again with its CAS.
		if rerr := s.readCAS(ctx); rerr != nil {
			return rerr
		}
		return fmt.Errorf("renewal: %w (the item holds our value: tried again with its CAS)", err)
	case err != nil:
		return permanent(err)
	}
	return s.readCAS(ctx)
}

// readCAS reads the item's CAS after a write of ours; an item gone since
// is put back if the server is quiet.
func (s *server) readCAS(ctx context.Context) error {
	it, err := s.l.c.mc.Get(s.l.key)
	switch {
	case missing(err):
		return s.putBack(ctx)
	case err != nil:
		return permanent(err)
	case string(it.Value) != string(s.id):
		return ttl.ErrNotOurs
	}
	s.cas = it.CasID
	return nil
}

// putBack adds the lock item again, with our value, when it is gone while
// the server is quiet: the server may have forgotten it, and no one can
// have been granted the lock since. When the server is not quiet, the
// item was deleted or evicted, and the lock is lost (ttl.ErrNotOurs).
// Nothing is put back once ctx (the lease's deadline) has ended.
func (s *server) putBack(ctx context.Context) error {
	l := s.l
	quiet, err := l.readQuiet()
	switch {
	case err != nil:
		return err
	case !quiet:
		return fmt.Errorf("%w: its item is gone (deleted or evicted)", ttl.ErrNotOurs)
	case ctx.Err() != nil:
		return ctx.Err()
	}
	err = l.c.mc.Add(&memcache.Item{Key: l.key, Value: s.id, Expiration: l.seconds()})
	switch {
	case errors.Is(err, memcache.ErrNotStored):
		return errPutBack
	case err != nil:
		return permanent(err)
	}
	return s.readCAS(ctx)
}

// Free deletes the item by compare-and-swap with the CAS we hold and an
// expiry of -1: only while it is still ours. An item gone while the server
// is quiet was forgotten, not taken: that is no loss.
func (s *server) Free(ctx context.Context) error {
	return s.l.call(ctx, func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		err := s.l.deleteOurs(s.id, s.cas)
		if missing(err) {
			if quiet, qerr := s.l.readQuiet(); qerr != nil || quiet {
				return qerr
			}
		}
		return err
	})
}
