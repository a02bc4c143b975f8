package curator

import (
	"encoding/hex"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// CacheKind is which of Curator's caches an agent runs.
type CacheKind string

// The caches of Curator 5.4 the agent runs.
const (
	// CuratorCache is CuratorCache.build: one persistent recursive watch
	// (ZooKeeper 3.6's addWatch) on the whole tree.
	CuratorCache CacheKind = "curator"
	// TreeCache is the older TreeCache: a watch per node.
	TreeCache CacheKind = "tree"
)

// AllLevels is the depth of a cache without a depth limit.
const AllLevels = -1

// CacheSpec says which cache StartCache starts.
type CacheSpec struct {
	Kind CacheKind
	Path string
	// Depth is how many levels below Path the cache shows: 0 the node
	// alone (CuratorCache: Options.SINGLE_NODE_CACHE), 1 the node and its
	// children, AllLevels the whole tree. A CuratorCache of depth 1 or more
	// still caches the whole tree (Curator has no other way): only its view
	// and events are limited, as Curator's forPathChildrenCache listener
	// filters them. A TreeCache gets setMaxDepth(Depth).
	Depth int
	// Compressed reads the data as written with Curator's compression
	// (CuratorCache's Options.COMPRESSED_DATA, TreeCache's
	// setDataIsCompressed).
	Compressed bool
}

// Stat is the part of a node's stat the cache tests compare.
type Stat struct {
	Czxid, Mzxid int64
	Version      int32
}

// Node is one node of a cache's view. Data is nil when the cache keeps none.
type Node struct {
	Path string
	Stat
	Data []byte
}

// EventType is the kind of a cache event.
type EventType string

// The events a cache reports, Curator's names mapped to the Go cache's.
const (
	EventCreated     EventType = "created"     // NODE_CREATED, TreeCache's NODE_ADDED
	EventChanged     EventType = "changed"     // NODE_CHANGED, NODE_UPDATED
	EventDeleted     EventType = "deleted"     // NODE_DELETED, NODE_REMOVED
	EventInitialized EventType = "initialized" // the initial load is done
)

// Event is one event a cache delivered. For EventDeleted, Stat is the
// node's last; for EventInitialized, Path is empty and Stat zero.
type Event struct {
	Type EventType
	Path string
	Stat
}

// StartCache starts a cache in the agent ("cache" or "treecache"),
// closing the one it ran before. It does not wait for the initial load:
// see AwaitCache.
func (a *Agent) StartCache(t testing.TB, spec CacheSpec) {
	t.Helper()
	cmd := "cache"
	switch spec.Kind {
	case CuratorCache:
	case TreeCache:
		cmd = "treecache"
	default:
		t.Fatalf("%s: StartCache: unknown cache kind %q", a.name, spec.Kind)
	}
	depth := "all"
	if spec.Depth >= 0 {
		depth = strconv.Itoa(spec.Depth)
	} else if spec.Depth != AllLevels {
		t.Fatalf("%s: StartCache: depth %d, want 0 or more, or AllLevels", a.name, spec.Depth)
	}
	cmd += " " + spec.Path + " " + depth
	if spec.Compressed {
		cmd += " compressed"
	}
	a.DoExpect(t, cmd, "ok")
}

// AwaitCache waits, at most within (measured in the JVM), for the cache's
// initialized event and reports whether it came.
func (a *Agent) AwaitCache(t testing.TB, within time.Duration) bool {
	t.Helper()
	cmd := fmt.Sprintf("cache-await %d", within.Milliseconds())
	switch r := a.Do(t, cmd); r {
	case "initialized":
		return true
	case "not-initialized":
		return false
	default:
		t.Fatalf("%s: reply to %q is %q, want initialized or not-initialized\n%s", a.name, cmd, r, a.report())
		return false
	}
}

// CacheView returns the cache's current view in path order. The agent
// reads it node by node, not atomically: compare it once writes are quiet.
func (a *Agent) CacheView(t testing.TB) []Node {
	t.Helper()
	return parseList(t, a, "cache-view", "view", parseNode)
}

// CacheEvents returns the events the cache delivered since the last call,
// in order of arrival.
func (a *Agent) CacheEvents(t testing.TB) []Event {
	t.Helper()
	return parseList(t, a, "cache-events", "events", parseEvent)
}

// parseList runs cmd, whose reply is prefix and a list, and parses each
// item.
func parseList[T any](t testing.TB, a *Agent, cmd, prefix string, parse func(string) (T, error)) []T {
	t.Helper()
	items := a.List(t, cmd, prefix)
	out := make([]T, 0, len(items))
	for _, it := range items {
		v, err := parse(it)
		if err != nil {
			t.Fatalf("%s: %s: %v\n%s", a.name, cmd, err, a.report())
		}
		out = append(out, v)
	}
	return out
}

// CloseCache closes the agent's cache.
func (a *Agent) CloseCache(t testing.TB) {
	t.Helper()
	a.DoExpect(t, "cache-close", "closed")
}

// parseNode parses one node of a cache-view reply:
// PATH,CZXID,MZXID,VERSION,HEX (HEX "-": no data kept).
func parseNode(s string) (Node, error) {
	f := strings.Split(s, ",")
	if len(f) != 5 {
		return Node{}, fmt.Errorf("node %q: want PATH,CZXID,MZXID,VERSION,DATA", s)
	}
	p, st, err := parsePathStat(f[:4])
	if err != nil {
		return Node{}, fmt.Errorf("node %q: %w", s, err)
	}
	n := Node{Path: p, Stat: st}
	if f[4] != "-" {
		if n.Data, err = hex.DecodeString(f[4]); err != nil {
			return Node{}, fmt.Errorf("node %q: data: %w", s, err)
		}
	}
	return n, nil
}

// parseEvent parses one event of a cache-events reply:
// TYPE,PATH,CZXID,MZXID,VERSION or initialized.
func parseEvent(s string) (Event, error) {
	if s == string(EventInitialized) {
		return Event{Type: EventInitialized}, nil
	}
	f := strings.Split(s, ",")
	if len(f) != 5 {
		return Event{}, fmt.Errorf("event %q: want TYPE,PATH,CZXID,MZXID,VERSION or initialized", s)
	}
	typ := EventType(f[0])
	switch typ {
	case EventCreated, EventChanged, EventDeleted:
	default:
		return Event{}, fmt.Errorf("event %q: unknown type %q", s, f[0])
	}
	p, st, err := parsePathStat(f[1:])
	if err != nil {
		return Event{}, fmt.Errorf("event %q: %w", s, err)
	}
	return Event{Type: typ, Path: p, Stat: st}, nil
}

// parsePathStat parses PATH (escaped), CZXID, MZXID, VERSION.
func parsePathStat(f []string) (string, Stat, error) {
	p, err := url.PathUnescape(f[0])
	if err != nil {
		return "", Stat{}, fmt.Errorf("path: %w", err)
	}
	var st Stat
	if st.Czxid, err = strconv.ParseInt(f[1], 10, 64); err != nil {
		return "", Stat{}, fmt.Errorf("czxid: %w", err)
	}
	if st.Mzxid, err = strconv.ParseInt(f[2], 10, 64); err != nil {
		return "", Stat{}, fmt.Errorf("mzxid: %w", err)
	}
	v, err := strconv.ParseInt(f[3], 10, 32)
	if err != nil {
		return "", Stat{}, fmt.Errorf("version: %w", err)
	}
	st.Version = int32(v)
	return p, st, nil
}
