package engine

// An in-memory ZooKeeper for the engine's tests, no server, no network.
//
//   - fakeServer (this file) is the ensemble: a tree of nodes with their
//     Stat, ephemeral and sequential nodes, one-shot watches, and which
//     sessions the server has closed. Tests also act on it directly (Put,
//     Remove, ExpireSession, ...): those "admin" calls take no fault.
//   - fakeConn (fakeconn_test.go) is one client: it implements Conn, owns a
//     ZooKeeper session whose values (fakeSession, fakesession_test.go) the
//     test ends at will, and passes every request through the interceptors
//     that inject faults (faults_test.go). Multi reads session.Op by
//     reflection (fakemulti_test.go).
//   - fake_check_test.go pins the fake's own behaviour; extend it with the
//     fake.
//
// Semantics follow ZooKeeper where the engine can tell: the sequence of a
// sequential node is its parent's cversion (bumped by every child create
// and delete), a client can delete another session's ephemeral node,
// ephemeral nodes have no children, watches fire once (the channel gets one
// event and is closed, as go-zookeeper does), GetW and ChildrenW on a
// missing node fail with ErrNoNode and leave no watch, and a Multi is all
// or nothing.

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/znode"
)

type fakeServer struct {
	mu      sync.Mutex
	nodes   map[string]fakeNode // by path; "/" always exists
	zxid    int64
	lastID  int64          // the last session id handed out
	closed  map[int64]bool // sessions the server has closed (expired)
	watches map[fakeWatchKey][]fakeWatch
	pending []fakeFire // events of the current change, fired once it is applied
}

type fakeNode struct {
	data      []byte
	stat      session.Stat
	container bool // made by CreateWithZxid as a missing parent
}

type fakeWatchKind int

const (
	fakeDataWatch  fakeWatchKind = iota // GetW: the node's data and deletion
	fakeChildWatch                      // ChildrenW: the node's children and deletion
)

type fakeWatchKey struct {
	path string
	kind fakeWatchKind
}

type fakeWatch struct {
	conn *fakeConn // the client that set it
	ch   chan session.Event
}

type fakeFire struct {
	key fakeWatchKey
	typ session.EventType
}

func newFakeServer() *fakeServer {
	return &fakeServer{
		nodes:   map[string]fakeNode{"/": {}},
		lastID:  0x1000,
		closed:  map[int64]bool{},
		watches: map[fakeWatchKey][]fakeWatch{},
	}
}

// ---- admin: what tests read and do directly, with no fault ----

// Children returns the names of path's children, sorted (nil when none or
// no such node).
func (s *fakeServer) Children(path string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.childrenLocked(path)
}

// Stat returns path's Stat, and false when there is no such node.
func (s *fakeServer) Stat(path string) (session.Stat, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.nodes[path]
	n.stat.NumChildren = int32(len(s.childrenLocked(path)))
	return n.stat, ok
}

// Exists reports whether path exists.
func (s *fakeServer) Exists(path string) bool { _, ok := s.Stat(path); return ok }

// Put creates path (parents as containers) as session owner would (0: a
// persistent node) and returns the created path.
func (s *fakeServer) Put(path string, owner int64, mode session.CreateMode) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.makeParentsLocked(path)
	p, _, err := s.createLocked(owner, path, nil, mode)
	if err != nil {
		panic(fmt.Sprintf("fake: Put %s: %v", path, err))
	}
	s.flushLocked()
	return p
}

// Remove deletes path whatever its version (an operator, or another
// client).
func (s *fakeServer) Remove(path string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.apply(func() error { return s.deleteLocked(path, -1) })
}

// Watches counts the watches set on path (data and children).
func (s *fakeServer) Watches(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.watches[fakeWatchKey{path, fakeDataWatch}]) + len(s.watches[fakeWatchKey{path, fakeChildWatch}])
}

// ReapContainers deletes the containers that had children and have none
// left, as the server does every so often.
func (s *fakeServer) ReapContainers() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range slices.Sorted(maps.Keys(s.nodes)) {
		if n := s.nodes[p]; n.container && n.stat.Cversion > 0 && len(s.childrenLocked(p)) == 0 {
			_ = s.deleteLocked(p, -1)
		}
	}
	s.flushLocked()
}

// ---- the tree, under mu ----

// apply runs change and fires its watches if it succeeds; on failure the
// tree is left as it was (all or nothing, as a Multi).
func (s *fakeServer) apply(change func() error) error {
	nodes, zxid := maps.Clone(s.nodes), s.zxid
	if err := change(); err != nil {
		s.nodes, s.zxid, s.pending = nodes, zxid, nil
		return err
	}
	s.flushLocked()
	return nil
}

func (s *fakeServer) childrenLocked(path string) []string {
	var out []string
	for p := range s.nodes {
		if p != "/" && session.ParentPath(p) == path {
			out = append(out, session.BaseName(p))
		}
	}
	slices.Sort(out)
	return out
}

func (s *fakeServer) createLocked(owner int64, path string, data []byte, mode session.CreateMode) (string, int64, error) {
	parentPath := session.ParentPath(path)
	parent, ok := s.nodes[parentPath]
	switch {
	case !ok:
		return "", 0, session.ErrNoNode
	case parent.stat.EphemeralOwner != 0:
		return "", 0, session.ErrNoChildrenForEphemerals
	}
	if mode.IsSequential() {
		path = fmt.Sprintf("%s%0*d", path, znode.SeqDigits, parent.stat.Cversion)
	}
	if _, ok := s.nodes[path]; ok {
		return "", 0, session.ErrNodeExists
	}
	s.zxid++
	n := fakeNode{data: slices.Clone(data), stat: session.Stat{Czxid: s.zxid, Mzxid: s.zxid, Pzxid: s.zxid,
		DataLength: int32(len(data))}}
	if mode.IsEphemeral() {
		n.stat.EphemeralOwner = owner
	}
	s.nodes[path] = n
	parent.stat.Cversion++
	parent.stat.Pzxid = s.zxid
	s.nodes[parentPath] = parent
	s.pending = append(s.pending, fakeFire{fakeWatchKey{parentPath, fakeChildWatch}, session.EventNodeChildrenChanged})
	return path, n.stat.Czxid, nil
}

// makeParentsLocked creates path's missing ancestors as containers.
func (s *fakeServer) makeParentsLocked(path string) {
	parent := session.ParentPath(path)
	if _, ok := s.nodes[parent]; ok || parent == "/" {
		return
	}
	s.makeParentsLocked(parent)
	if _, _, err := s.createLocked(0, parent, nil, 0); err == nil {
		n := s.nodes[parent]
		n.container = true
		s.nodes[parent] = n
	}
}

func (s *fakeServer) deleteLocked(path string, version int32) error {
	n, ok := s.nodes[path]
	switch {
	case !ok || path == "/":
		return session.ErrNoNode
	case version != -1 && version != n.stat.Version:
		return session.ErrBadVersion
	case len(s.childrenLocked(path)) > 0:
		return session.ErrNotEmpty
	}
	delete(s.nodes, path)
	s.zxid++
	parentPath := session.ParentPath(path)
	parent := s.nodes[parentPath]
	parent.stat.Cversion++
	parent.stat.Pzxid = s.zxid
	s.nodes[parentPath] = parent
	s.pending = append(s.pending,
		fakeFire{fakeWatchKey{path, fakeDataWatch}, session.EventNodeDeleted},
		fakeFire{fakeWatchKey{path, fakeChildWatch}, session.EventNodeDeleted},
		fakeFire{fakeWatchKey{parentPath, fakeChildWatch}, session.EventNodeChildrenChanged})
	return nil
}

func (s *fakeServer) setLocked(path string, data []byte, version int32) (session.Stat, error) {
	n, ok := s.nodes[path]
	switch {
	case !ok:
		return session.Stat{}, session.ErrNoNode
	case version != -1 && version != n.stat.Version:
		return session.Stat{}, session.ErrBadVersion
	}
	s.zxid++
	n.data, n.stat.Version, n.stat.Mzxid, n.stat.DataLength = slices.Clone(data), n.stat.Version+1, s.zxid, int32(len(data))
	s.nodes[path] = n
	s.pending = append(s.pending, fakeFire{fakeWatchKey{path, fakeDataWatch}, session.EventNodeDataChanged})
	return n.stat, nil
}

func (s *fakeServer) checkLocked(path string, version int32) error {
	n, ok := s.nodes[path]
	switch {
	case !ok:
		return session.ErrNoNode
	case version != -1 && version != n.stat.Version:
		return session.ErrBadVersion
	}
	return nil
}

// watchLocked leaves a one-shot watch of conn on key.
func (s *fakeServer) watchLocked(conn *fakeConn, key fakeWatchKey) <-chan session.Event {
	ch := make(chan session.Event, 1)
	s.watches[key] = append(s.watches[key], fakeWatch{conn, ch})
	return ch
}

// flushLocked fires the watches of the change just applied.
func (s *fakeServer) flushLocked() {
	for _, f := range s.pending {
		for _, w := range s.watches[f.key] {
			w.ch <- session.Event{Type: f.typ, Path: f.key.path}
			close(w.ch)
		}
		delete(s.watches, f.key)
	}
	s.pending = nil
}

// describe is the tree, for failure messages.
func (s *fakeServer) describe() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, p := range slices.Sorted(maps.Keys(s.nodes)) {
		fmt.Fprintf(&b, "%s (czxid %d, owner 0x%x)\n", p, s.nodes[p].stat.Czxid, s.nodes[p].stat.EphemeralOwner)
	}
	return b.String()
}
