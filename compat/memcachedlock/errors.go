package memcachedlock

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/refusal"
)

// The package's errors; test them with errors.Is.
var (
	// ErrQuiet: the server may have forgotten the lock's holder (it
	// restarted, was flushed, or this is the key's first use on it), so it
	// grants the lock to no one for the TTL + 2 s after that was found.
	// TryAcquire's error is then recipes.ErrLocked and ErrQuiet.
	// It is recipes.ErrQuiet.
	ErrQuiet = fmt.Errorf("%w: memcachedlock: the server may have forgotten the lock's holder (restarted, flushed, or the key's first use): it grants the lock to no one until the TTL + 2 s after that was found have passed", recipes.ErrQuiet)
	// ErrEvictions: the server runs with evictions on, so it may drop a
	// held lock's item and grant the lock to another client.
	ErrEvictions = errors.New("memcachedlock: memcached runs with evictions on")
	// ErrClosed: the Client was closed (Close); its locks take the lock no
	// more.
	ErrClosed = errors.New("memcachedlock: the Client is closed")
)

// permanent marks with ttl.Permanent the gomemcache errors that trying
// again cannot mend: no server configured (memcache.ErrNoServers: the
// client was made with no address, or with one that did not resolve), a
// key memcached refuses (memcache.ErrMalformedKey), a request the server
// refuses as malformed or unauthenticated (CLIENT_ERROR, also from a
// DialContext that authenticates and says so); and, with ttl.Refused (an
// acquisition ends at it, a renewal tries again until the lease's
// deadline), a TLS handshake refused either way. Refusals (the module's
// one rule, package refusal) are marked so that errors.Is(err,
// recipes.ErrRefused) holds. Others (a server that cannot be reached or
// does not answer, a server error) stay transient. gomemcache's Close
// closes idle connections only: a closed client still works, so there is
// no closed-client error.
func permanent(err error) error {
	r, _ := refusal.Of(err)
	switch {
	case err == nil:
		return nil
	case r.TLS():
		return ttl.Refused(refusal.Mark(err))
	case r != refusal.NotRefused:
		return ttl.Permanent(refusal.Mark(err))
	case errors.Is(err, memcache.ErrNoServers), errors.Is(err, memcache.ErrMalformedKey),
		strings.Contains(err.Error(), "CLIENT_ERROR"):
		return ttl.Permanent(err)
	}
	return err
}

// notOurs maps memcached's "changed" or "gone" to ttl.ErrNotOurs.
func notOurs(err error) error {
	if errors.Is(err, memcache.ErrCASConflict) || missing(err) {
		return fmt.Errorf("%w: %w", ttl.ErrNotOurs, err)
	}
	return permanent(err)
}

// missing reports whether err says that the item is not there:
// gomemcache's NOT_FOUND, or NOT_STORED for a compare-and-swap.
func missing(err error) bool {
	return errors.Is(err, memcache.ErrCacheMiss) || errors.Is(err, memcache.ErrNotStored)
}

// refusedTLS reports whether err is a TLS handshake refused either way.
func refusedTLS(err error) bool {
	r, _ := refusal.Of(err)
	return r.TLS()
}

// unsent reports whether err shows that a request never reached the
// server (no connection could be made: also a TLS handshake refused, or
// the client refused it), so that it cannot have added anything.
func unsent(err error) bool {
	var op *net.OpError
	var timeout *memcache.ConnectTimeoutError
	return errors.Is(err, memcache.ErrNoServers) || errors.Is(err, memcache.ErrMalformedKey) ||
		errors.As(err, &timeout) || (errors.As(err, &op) && op.Op == "dial") || refusedTLS(err)
}
