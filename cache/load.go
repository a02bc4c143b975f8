package cache

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/zkrecipes/zkrecipes/session"
)

// maxInFlight bounds the nodes of a load read at once: it is the number
// of the load's goroutines, each reading one node (two requests in turn)
// at a time, all on the client's one connection, in a pipeline. On two
// cores shared with the server, more in flight was not reliably faster:
// a bare client's reads (BenchmarkLoadFloor, bounds from 4 to 1,024) had
// a different fastest bound in each of three runs (16, 64, 1,024), the
// server's and the client's CPU being the bound, not round trips; the
// cache loaded faster with 128 workers than with 16 in a quick
// comparison.
const maxInFlight = 128

// rootAttempts bounds the reads of a path that keeps being created and
// deleted between its read and the watch on its creation.
const rootAttempts = 3

// errFlapping: the path was there for the watch on its creation and gone
// for the read of its data, rootAttempts times.
var errFlapping = errors.New("cache: the path keeps being created and deleted")

// loaded is what the read of one node found.
type loaded struct {
	node Node
	kids []string // the names of its children to cache; nil when not cached
	ok   bool     // it exists
	err  error
}

// load reads the subtrees at tops, each node's children as soon as its
// listing arrives (not level by level: a slow node holds up only its own
// subtree); it returns them keyed by path, and the nodes whose ACL
// refused the read (see refused.go), keyed by path too. Each node read is
// left with its watches armed. A node gone between its parent's listing
// and its own read is left out, and so is its name from its parent's
// children: the parent's watch on its children tells the change. So is a
// refused node's name. On an error the reads under way finish, no new
// one starts, and the first error is returned.
func (x *Cache) load(tops []string) (map[string]*entry, map[string]error, error) {
	l := loader{x: x, got: map[string]*entry{}, todo: slices.Clone(tops), pending: len(tops)}
	l.more = sync.NewCond(&l.mu)
	var wg sync.WaitGroup
	for range maxInFlight { // not fewer for fewer tops: their children come
		wg.Go(l.work)
	}
	wg.Wait()
	if l.err != nil {
		return nil, nil, l.err
	}
	for p, e := range l.got {
		for k := range e.kids {
			if _, ok := l.got[session.JoinPath(p, k)]; !ok {
				delete(e.kids, k)
			}
		}
	}
	return l.got, l.refused, nil
}

// loader is one load's shared state: the paths to read and what was read.
type loader struct {
	x       *Cache
	mu      sync.Mutex
	more    *sync.Cond // todo grew, or pending reached 0, or err was set
	todo    []string   // paths to read
	pending int        // paths in todo or being read
	got     map[string]*entry
	refused map[string]error
	err     error
}

// work reads paths from todo until none is left or pending, or an error
// ends the load.
func (l *loader) work() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		for len(l.todo) == 0 && l.pending > 0 && l.err == nil {
			l.more.Wait()
		}
		if len(l.todo) == 0 || l.err != nil {
			return
		}
		p := l.todo[len(l.todo)-1]
		l.todo = l.todo[:len(l.todo)-1]
		l.mu.Unlock()
		r := l.x.read(p)
		l.mu.Lock()
		l.done(p, r)
	}
}

// done records r, the read of p, and queues p's children; the caller
// holds l.mu.
func (l *loader) done(p string, r loaded) {
	l.pending--
	defer l.more.Broadcast()
	switch {
	case r.err != nil && isRefusal(r.err):
		if l.refused == nil {
			l.refused = map[string]error{}
		}
		l.refused[p] = r.err
		return
	case r.err != nil:
		if l.err == nil {
			l.err = r.err
		}
		return
	case !r.ok:
		return
	}
	e := &entry{node: r.node}
	if len(r.kids) > 0 {
		e.kids = make(map[string]struct{}, len(r.kids))
		for _, k := range r.kids {
			e.kids[k] = struct{}{}
			l.todo = append(l.todo, session.JoinPath(p, k))
		}
		l.pending += len(r.kids)
	}
	l.got[p] = e
}

// read reads one node: its data and Stat and, above the depth limit, its
// children's names, arming the watches that are not armed. The missing
// path itself is left with a watch on its creation.
func (x *Cache) read(p string) loaded {
	for attempt := 1; ; attempt++ {
		n, ok, err := x.readData(p)
		if err != nil {
			return loaded{err: err}
		}
		if !ok {
			if p != x.root {
				return loaded{}
			}
			there, err := x.watchExists(p)
			switch {
			case err != nil:
				return loaded{err: err}
			case !there:
				return loaded{}
			case attempt == rootAttempts:
				return loaded{err: fmt.Errorf("%w: %s", errFlapping, p)}
			}
			continue
		}
		if !x.wantChildren(p) {
			return loaded{node: n, ok: true}
		}
		kids, ok, err := x.readKids(p)
		if err != nil || !ok {
			// Gone since its data was read: its data watch tells.
			return loaded{err: err}
		}
		return loaded{node: n, kids: kids, ok: true}
	}
}

// readData reads p's data and Stat, with a data watch unless one is
// armed; false when p does not exist.
func (x *Cache) readData(p string) (Node, bool, error) {
	var (
		data []byte
		st   *session.Stat
		err  error
	)
	if x.w.isArmed(p, dataWatch) {
		data, st, err = x.c.Get(x.ctx, p)
	} else if data, st, err = x.c.GetWatch(x.ctx, p); err == nil {
		x.w.arm(p, dataWatch)
	}
	if errors.Is(err, session.ErrNoNode) {
		return Node{}, false, nil
	}
	if err != nil {
		return Node{}, false, fmt.Errorf("cache: %w", err)
	}
	return Node{Path: p, Data: x.keep(data), Stat: *st}, true, nil
}

// readKids lists p's children to cache (those the filter keeps), with a
// watch on them unless one is armed; false when p does not exist.
func (x *Cache) readKids(p string) ([]string, bool, error) {
	var (
		names []string
		err   error
	)
	if x.w.isArmed(p, childWatch) {
		names, _, err = x.c.Children(x.ctx, p)
	} else if names, _, err = x.c.ChildrenWatch(x.ctx, p); err == nil {
		x.w.arm(p, childWatch)
	}
	if errors.Is(err, session.ErrNoNode) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("cache: %w", err)
	}
	kept := make([]string, 0, len(names))
	for _, k := range names {
		if x.opt.filter == nil || x.opt.filter(session.JoinPath(p, k)) {
			kept = append(kept, k)
		}
	}
	return kept, true, nil
}

// watchExists says whether p exists, leaving a watch on its creation (or,
// if it exists, on its data) unless one is armed.
func (x *Cache) watchExists(p string) (bool, error) {
	var (
		ok  bool
		err error
	)
	if x.w.isArmed(p, dataWatch) {
		ok, _, err = x.c.Exists(x.ctx, p)
	} else if ok, _, err = x.c.ExistsWatch(x.ctx, p); err == nil {
		x.w.arm(p, dataWatch)
	}
	if err != nil {
		return false, fmt.Errorf("cache: %w", err)
	}
	return ok, nil
}

// wantChildren says whether p's children are cached: p is above the depth
// limit.
func (x *Cache) wantChildren(p string) bool {
	return x.opt.depth < 0 || x.level(p) < x.opt.depth
}

// level is p's depth below the root (the root's is 0).
func (x *Cache) level(p string) int {
	switch {
	case p == x.root:
		return 0
	case x.root == "/":
		return strings.Count(p, "/")
	default:
		return strings.Count(p[len(x.root):], "/")
	}
}

// gzipMagic starts every gzip stream.
var gzipMagic = []byte{0x1f, 0x8b}

// keep is the data the view keeps of data read.
func (x *Cache) keep(data []byte) []byte {
	switch {
	case x.opt.noData:
		return nil
	case x.opt.gunzip && bytes.HasPrefix(data, gzipMagic):
		if r, err := gzip.NewReader(bytes.NewReader(data)); err == nil {
			if plain, err := io.ReadAll(r); err == nil {
				return plain
			}
		}
	}
	return data
}
