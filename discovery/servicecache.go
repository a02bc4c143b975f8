package discovery

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/zkrecipes/zkrecipes/cache"
	"github.com/zkrecipes/zkrecipes/session"
)

// ServiceCache is curator-x-discovery's ServiceCache: the instances of one
// service kept current by a cache of basePath/<name> and its children
// (package cache, depth 1). Once initialised, Instances answers without a
// request. Its methods are safe for concurrent use.
//
// Session loss: while the client's connection is suspended the cache
// keeps serving the last instances it saw (Freshness says since when
// they may be stale); on reconnection, to the same session or a new one,
// it reads the service again and the instances become what the server
// holds. Dynamic instances of a session that expired are gone from the
// server, and from the cache once it has read it again.
type ServiceCache struct {
	name string
	x    *cache.Cache

	mu        sync.Mutex
	instances map[string]Instance // by node name
	changed   chan struct{}       // buffered 1: a change not yet told

	initialized chan struct{} // closed when the first load is in instances
	done        chan struct{} // closed when the event loop ends
}

// Cache starts a ServiceCache of the service name, in the background,
// until Close, the end of ctx or the client's Close; Initialized waits
// for its first load. The service's node is never created: a service not
// registered yet is an empty cache that fills when it appears. Bad input
// is an ErrInvalidArgument error; it does no I/O itself.
func (d *Discovery) Cache(ctx context.Context, name string) (*ServiceCache, error) {
	if ctx == nil {
		return nil, fmt.Errorf("%w: nil context", ErrInvalidArgument)
	}
	parent, err := ServicePath(d.base, name)
	if err != nil {
		return nil, err
	}
	x, err := cache.Start(ctx, d.client, parent, cache.WithDepth(1))
	if err != nil {
		return nil, fmt.Errorf("discovery: cache of %s: %w", name, err)
	}
	s := &ServiceCache{
		name:        name,
		x:           x,
		instances:   map[string]Instance{},
		changed:     make(chan struct{}, 1),
		initialized: make(chan struct{}),
		done:        make(chan struct{}),
	}
	go s.loop(parent)
	return s, nil
}

// loop applies the cache's events to the instances until the cache ends.
// It reads every event, so none queue up.
func (s *ServiceCache) loop(parent string) {
	defer close(s.done)
	for ev := range s.x.Events() {
		switch ev.Type {
		case cache.Initialized:
			close(s.initialized)
			continue
		case cache.Created, cache.Changed, cache.Deleted:
		default:
			continue // Stale, Fresh: Freshness tells them
		}
		if ev.Node.Path == parent {
			continue // the service's node: its data is no instance
		}
		node := session.BaseName(ev.Node.Path)
		s.mu.Lock()
		if ev.Type == cache.Deleted {
			delete(s.instances, node)
		} else if inst, err := Decode(ev.Node.Data); err == nil {
			inst.Node = node
			s.instances[node] = inst
		} else {
			// Not an instance: Curator's ServiceCache logs and skips it.
			delete(s.instances, node)
		}
		s.mu.Unlock()
		select {
		case s.changed <- struct{}{}:
		default: // a change is already waiting to be told
		}
	}
}

// Initialized waits until the first load is complete, ctx ends (its
// error), or the cache ends first (ErrClosed). A cache started while the
// client is disconnected loads once it connects. When the service's node
// refuses this client the read (its ACL), the load is complete and empty,
// and Initialized returns the refusal (recipes.ErrRefused and
// session.ErrNoAuth), as Discovery.Instances does, for as long as it is
// refused: no instance is not what the registry holds.
func (s *ServiceCache) Initialized(ctx context.Context) error {
	if ctx == nil {
		return fmt.Errorf("%w: nil context", ErrInvalidArgument)
	}
	select {
	case <-s.initialized:
		return s.refused(ctx)
	default:
	}
	select {
	case <-s.initialized:
		return s.refused(ctx)
	case <-s.done:
		select {
		case <-s.initialized:
			return s.refused(ctx)
		default:
			return fmt.Errorf("%w: cache of %s", ErrClosed, s.name)
		}
	case <-ctx.Done():
		return fmt.Errorf("discovery: cache of %s: %w", s.name, context.Cause(ctx))
	}
}

// refused is the refusal of the service node's read, once loaded (the
// cache's Initialized tells it, at once: its first load is complete).
func (s *ServiceCache) refused(ctx context.Context) error {
	if err := s.x.Initialized(context.WithoutCancel(ctx)); err != nil && !errors.Is(err, cache.ErrClosed) {
		return fmt.Errorf("discovery: cache of %s: %w", s.name, err)
	}
	return nil
}

// Instances returns the cached instances, sorted by node name, each with
// its Node set; none when the service has no instance (or before the
// first load: see Initialized). A node whose data is no instance is left
// out. It makes no request.
func (s *ServiceCache) Instances() []Instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Instance, 0, len(s.instances))
	for _, k := range slices.Sorted(maps.Keys(s.instances)) {
		out = append(out, s.instances[k])
	}
	return out
}

// Changed receives (coalesced: one value for any number of changes not
// yet received) after the instances changed; Curator's
// ServiceCacheListener.cacheChanged. Read Instances then.
func (s *ServiceCache) Changed() <-chan struct{} { return s.changed }

// Freshness says whether the cache is initialised, connected, and since
// when its instances may be stale (see the type's doc on session loss).
func (s *ServiceCache) Freshness() cache.Freshness { return s.x.Freshness() }

// Close stops the cache and waits for its goroutine; the instances stay
// readable. It is safe to call more than once; it returns nil.
func (s *ServiceCache) Close() error {
	err := s.x.Close()
	<-s.done
	return err
}
