package cache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// The errors of package cache; test them with errors.Is.
var (
	// ErrInvalidArgument: bad input (nil context or client, invalid path,
	// option value). It is recipes.ErrInvalidArgument too.
	ErrInvalidArgument = fmt.Errorf("cache: %w", recipes.ErrInvalidArgument)
	// ErrClosed: the cache was closed (Close, the end of Start's context,
	// or the client's Close) before it was initialised.
	ErrClosed = errors.New("cache: closed")
)

// DefaultDepth caches the whole subtree (TreeCache); see WithDepth.
const DefaultDepth = -1

// Option configures Start.
type Option func(*options) error

// options are what Options set; their defaults are set in Start.
type options struct {
	depth  int
	noData bool
	filter func(path string) bool
	gunzip bool
}

// WithDepth sets how deep below the path the cache reaches: 0 caches the
// node alone (Curator's NodeCache), 1 the node and its children
// (PathChildrenCache), n the levels down to n, DefaultDepth (-1) the whole
// subtree (TreeCache, the default). A node is watched for its data; a node
// above the limit is watched for its children too.
func WithDepth(n int) Option {
	return func(o *options) error {
		if n < -1 {
			return fmt.Errorf("%w: depth %d (want -1 for the whole subtree, or 0 and up)", ErrInvalidArgument, n)
		}
		o.depth = n
		return nil
	}
}

// WithoutData keeps each node's Stat only: Node.Data is nil, in the view
// and in the events. The data is still read (ZooKeeper's read of a node's
// Stat with a data watch returns it), but not kept.
func WithoutData() Option { return func(o *options) error { o.noData = true; return nil } }

// WithFilter caches only the nodes below the path for which keep returns
// true (the path itself is always cached); a node not kept is not read,
// not watched, and its subtree is not walked. keep runs on the cache's
// goroutine and must not block.
func WithFilter(keep func(path string) bool) Option {
	return func(o *options) error {
		if keep == nil {
			return fmt.Errorf("%w: nil filter", ErrInvalidArgument)
		}
		o.filter = keep
		return nil
	}
}

// WithDecompress gunzips data that starts with gzip's magic bytes 1f 8b, as
// Curator writes it under compressed() or a CompressionProvider (Curator's
// COMPRESSED_DATA). Data that does not start so (a node written
// uncompressed, by Go or by Curator without compressed()), or that starts
// so but is no valid gzip stream, is kept as read, and nothing is reported:
// one tree often holds both, and data that fails to inflate is still the
// node's data. Curator's CuratorCache, under COMPRESSED_DATA, fails to
// read such a node instead. A consumer that must know what was inflated
// caches without WithDecompress and gunzips itself.
func WithDecompress() Option { return func(o *options) error { o.gunzip = true; return nil } }

// Cache is a local view of a node, its children or a subtree, kept current
// by watches. Its methods are safe for concurrent use; the view is read
// without a request to the server.
type Cache struct {
	c    *session.Client
	root string
	opt  options

	ctx    context.Context // ends with the cache
	cancel context.CancelFunc
	wg     sync.WaitGroup
	events *queue
	inbox  inbox
	w      watches
	init   chan struct{} // closed once initialised

	mu     sync.Mutex // guards what follows, and each change of the view with its events
	view   map[string]*entry
	fresh  Freshness
	gen    uint64 // counts the connection's changes, to tell a resync overtaken by one
	resync bool   // the view must be read again when connected
	sessID int64  // the session of the latest connection
	// refused holds the nodes whose ACL refuses the read (refused.go).
	refused map[string]error

	watchSess int64 // the session of the watches armed (the loop's)
}

// entry is one node of the view and the names of its cached children.
type entry struct {
	node Node
	// kids is nil for a node with no cached children: most of a tree's
	// nodes are leaves, and an empty map each cost 47 B of heap per node
	// (BenchmarkMemoryPerNode).
	kids map[string]struct{}
}

// Start begins caching path on c, in the background, until Close, the end
// of ctx, or c's Close; Initialized waits for the first load. The path is
// never created: a missing path is an empty view that fills when it
// appears. It returns an ErrInvalidArgument error for bad input; it does
// no I/O itself.
func Start(ctx context.Context, c *session.Client, path string, opts ...Option) (*Cache, error) {
	if err := recipes.CheckContext(ctx); err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	if c == nil {
		return nil, fmt.Errorf("%w: nil client", ErrInvalidArgument)
	}
	if err := session.ValidatePath(path); err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	o := options{depth: DefaultDepth}
	for _, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("%w: nil Option", ErrInvalidArgument)
		}
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("cache: %w", context.Cause(ctx))
	}
	cctx, cancel := context.WithCancel(ctx)
	states, err := c.Subscribe(cctx)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("cache: %w", err)
	}
	// Before any watch is set: the stream tells every one's firing.
	notes, err := c.Notifications(cctx)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("cache: %w", err)
	}
	x := &Cache{
		c: c, root: path, opt: o,
		ctx: cctx, cancel: cancel,
		events:  newQueue(),
		inbox:   newInbox(),
		w:       watches{m: map[string]kind{}},
		init:    make(chan struct{}),
		view:    map[string]*entry{},
		refused: map[string]error{},
		fresh:   Freshness{StaleSince: time.Now()},
		resync:  true,
	}
	x.fresh.Connected = connected(c.State())
	if s := c.CurrentSession(); s != nil {
		x.sessID = s.ID()
	}
	x.wg.Add(4)
	go func() { defer x.wg.Done(); x.events.run(cctx.Done()) }()
	go func() { defer x.wg.Done(); x.follow(states) }()
	go func() { defer x.wg.Done(); x.listen(notes) }()
	go func() { defer x.wg.Done(); x.run() }()
	return x, nil
}

// Initialized waits until the first load is complete, ctx ends (its
// error), or the cache is closed (ErrClosed). A cache started while the
// client is disconnected loads once it connects. When the path's own ACL
// refuses this client the read, the load is complete with an empty view,
// and Initialized returns an error naming the path that is
// recipes.ErrRefused and session.ErrNoAuth, for as long as it is refused
// (the cache goes on, and reads the path again on each reconnection).
// Nodes refused below the path do not hold it back (Freshness.Refused).
func (x *Cache) Initialized(ctx context.Context) error {
	if err := recipes.CheckContext(ctx); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	select {
	case <-x.init:
		return x.rootRefused()
	default:
	}
	select {
	case <-x.init:
		return x.rootRefused()
	case <-x.ctx.Done():
		return ErrClosed
	case <-ctx.Done():
		return fmt.Errorf("cache: not initialised: %w", context.Cause(ctx))
	}
}

// rootRefused is the refusal of the path's own read, if any.
func (x *Cache) rootRefused() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.refused[x.root]; err != nil {
		return fmt.Errorf("cache: %s: not readable by this client: %w", x.root, err)
	}
	return nil
}

// Get returns the cached node at path; false when it is not in the view.
func (x *Cache) Get(path string) (Node, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e, ok := x.view[path]
	if !ok {
		return Node{}, false
	}
	return e.node, true
}

// Children returns the sorted names of the cached children of path (nil
// when path is not in the view or its children are not cached).
func (x *Cache) Children(path string) []string {
	x.mu.Lock()
	e, ok := x.view[path]
	var names []string
	if ok {
		for k := range e.kids {
			names = append(names, k)
		}
	}
	x.mu.Unlock()
	slices.Sort(names)
	return names
}

// Snapshot returns every cached node, sorted by path.
func (x *Cache) Snapshot() []Node {
	x.mu.Lock()
	nodes := make([]Node, 0, len(x.view))
	for _, e := range x.view {
		nodes = append(nodes, e.node)
	}
	x.mu.Unlock()
	slices.SortFunc(nodes, func(a, b Node) int { return strings.Compare(a.Path, b.Path) })
	return nodes
}

// Events returns the one ordered stream of the cache's events. Events
// queue without bound until read, in order: a consumer that stops reading
// blocks neither the cache nor the client (the queue grows with every
// change meanwhile). The channel closes when the cache ends; events not
// read by then are dropped. Every call returns the same channel.
func (x *Cache) Events() <-chan Event { return x.events.out }

// Freshness says whether the view is initialised, whether the client is
// connected, and since when the view may be stale.
func (x *Cache) Freshness() Freshness {
	x.mu.Lock()
	defer x.mu.Unlock()
	f := x.fresh
	f.Refused = refusedError(x.refused)
	return f
}

// Close stops the cache: its goroutines end and its watches are dropped
// (each watch's server-side registration ends when it fires or the
// session ends; ZooKeeper before 3.6 has no request to remove one). The
// view stays readable. It is safe to call more than once; it returns nil.
func (x *Cache) Close() error {
	x.cancel()
	x.wg.Wait()
	return nil
}

func connected(s session.State) bool {
	return s == session.Connected || s == session.Reconnected || s == session.ReadOnly
}
