package mutex_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/google/uuid"
	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/testkit/lockbench"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// Benchmarks, side by side on one server in one run: this mutex, the floor
// (the requests a lock cannot avoid, straight on go-zookeeper: create, get
// children, delete) and go-zookeeper's own zk.Lock. docs/benchmarks.md has
// the command and the results.

// rawConn is a go-zookeeper connection for the floor and zk.Lock.
func rawConn(b *testing.B, servers []string) *zk.Conn {
	b.Helper()
	conn, events, err := zk.Connect(servers, 15*time.Second, zk.WithLogInfo(false), zk.WithLogger(discard{}))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(conn.Close)
	deadline := time.After(waitLimit)
	for conn.State() != zk.StateHasSession {
		select {
		case <-events:
		case <-deadline:
			b.Fatal("no session")
		}
	}
	return conn
}

type discard struct{}

func (discard) Printf(string, ...any) {}

// floor is one uncontended acquire+release with nothing but the requests a
// queue lock needs: create our node, list the queue, delete our node.
func floor(conn *zk.Conn, path string) error {
	node, err := conn.Create(path+"/_c_"+uuid.NewString()+"-lock-", nil, zk.FlagEphemeralSequential, zk.WorldACL(zk.PermAll))
	if err != nil {
		return err
	}
	if _, _, err := conn.Children(path); err != nil {
		return err
	}
	return conn.Delete(node, -1)
}

// floorPipelined is the floor's requests with the create and the listing
// in flight together, straight on go-zookeeper: two round trips, the most
// any queue lock can get from pipelining (the mutex's CreateAndList does
// the same, and also reads the create's zxid). It measures what the machine
// allows in a run: the floor over floorPipelined bounds the mutex's ratio.
func floorPipelined(conn *zk.Conn, path string) error {
	type made struct {
		node string
		err  error
	}
	res := make(chan made, 1)
	go func() {
		node, err := conn.Create(path+"/_c_"+uuid.NewString()+"-lock-", nil, zk.FlagEphemeralSequential, zk.WorldACL(zk.PermAll))
		res <- made{node, err}
	}()
	// No wait for the create to leave first: go-zookeeper sends in the order
	// its calls queue, and this listing may then go out ahead of the create,
	// which costs it nothing here (the floor's listing is not read).
	_, _, listErr := conn.Children(path)
	m := <-res
	if m.err != nil {
		return m.err
	}
	if listErr != nil {
		return listErr
	}
	return conn.Delete(m.node, -1)
}

func ensure(b *testing.B, conn *zk.Conn, path string) {
	b.Helper()
	if _, err := conn.Create(path, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
		b.Fatal(err)
	}
}

var benchSeq atomic.Int64

func benchPath(kind string) string {
	return fmt.Sprintf("/bench/%s-%d-%d", kind, time.Now().UnixNano(), benchSeq.Add(1))
}

// uncontendedOp returns one uncontended acquire+release of the named
// implementation, on connections and a lock path of its own:
//   - floor: the floor's requests straight on go-zookeeper;
//   - floor-pipelined: the same with the create and the listing in flight
//     together (floorPipelined);
//   - session: the floor's requests through session.Client (the session
//     layer without the engine);
//   - mutex: this package's Mutex;
//   - zk.Lock: go-zookeeper's lock.
func uncontendedOp(b *testing.B, servers []string, name string) func() error {
	b.Helper()
	ctx := context.Background()
	switch name {
	case "floor", "floor-pipelined", "session":
		conn := rawConn(b, servers)
		path := benchPath(name)
		ensure(b, conn, "/bench")
		ensure(b, conn, path)
		switch name {
		case "floor":
			return func() error { return floor(conn, path) }
		case "floor-pipelined":
			return func() error { return floorPipelined(conn, path) }
		}
		c := connect(b, servers)
		return func() error {
			node, _, err := c.CreateWithZxid(ctx, path+"/_c_"+uuid.NewString()+"-lock-", nil, session.EphemeralSequential)
			if err != nil {
				return err
			}
			if _, _, err := c.Children(ctx, path); err != nil {
				return err
			}
			return c.Delete(ctx, node, -1)
		}
	case "mutex":
		m := newMutex(b, connect(b, servers), benchPath("mutex"))
		return func() error {
			l, err := m.Acquire(ctx)
			if err != nil {
				return err
			}
			return l.Release(ctx)
		}
	case "zk.Lock":
		l := zk.NewLock(rawConn(b, servers), benchPath("zklock"), zk.WorldACL(zk.PermAll))
		return func() error {
			if err := l.Lock(); err != nil {
				return err
			}
			return l.Unlock()
		}
	}
	b.Fatalf("no implementation %q", name)
	return nil
}

// uncontendedOps returns uncontendedOp of each name, in order.
func uncontendedOps(b *testing.B, servers []string, names ...string) []func() error {
	ops := make([]func() error, len(names))
	for i, n := range names {
		ops[i] = uncontendedOp(b, servers, n)
	}
	return ops
}

// BenchmarkUncontended: one acquire+release per op, each implementation on
// its own; ns/op, allocations and the requests the server received per op
// (mntr; pings and the session's rounds of proof included).
func BenchmarkUncontended(b *testing.B) {
	servers := sharedServers(b)
	for _, name := range []string{"floor", "mutex", "zk.Lock"} {
		b.Run("impl="+name, func(b *testing.B) {
			op := uncontendedOp(b, servers, name)
			b.ReportAllocs()
			before, err := lockbench.Packets(servers[0])
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for b.Loop() {
				if err := op(); err != nil {
					b.Fatal(err)
				}
				n++
			}
			after, err := lockbench.Packets(servers[0])
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(after-before)/float64(n), "requests/op")
		})
	}
}

// noFastHandoff is the mutex's driver with the fast handoff turned off: a
// waiter lists the queue again after every wake-up, as Curator does.
type noFastHandoff struct{ engine.LeaseDriver }

func (d noFastHandoff) Decide(kids []engine.Child, ours int) (engine.Decision, error) {
	dec, err := d.LeaseDriver.Decide(kids, ours)
	dec.FastHandoff, dec.Refresh = false, ""
	return dec, err
}

var (
	// mutexDriver is the default mutex's: lookahead on.
	mutexDriver = engine.LeaseDriver{Leases: 1, Kind: mutex.LockName, Lookahead: mutex.DefaultLookahead}
	// predecessorDriver watches the predecessor only (WithLookahead(false)).
	predecessorDriver = engine.LeaseDriver{Leases: 1, Kind: mutex.LockName}
)

// engineLock is a recipes.Locker over the engine's lock with any driver.
type engineLock struct{ l *engine.Lock }

func (e engineLock) Acquire(ctx context.Context) (recipes.Lease, error) {
	return e.l.Acquire(ctx, false)
}
func (e engineLock) TryAcquire(ctx context.Context) (recipes.Lease, error) {
	return e.l.Acquire(ctx, true)
}

// QueueLocks returns n contenders, each on its own session, for the queue
// lock at path with driver.
func queueLocks(b *testing.B, servers []string, path string, n int, driver engine.Driver) []func(func()) error {
	lockers := make([]recipes.Locker, n)
	for i := range lockers {
		lockers[i] = engineLock{engine.NewLock(engine.Client(connect(b, servers)), "mutex", "mutex "+path, path, mutex.LockName,
			[]string{mutex.LockName}, driver, nil)}
	}
	return lockbench.Lockers(context.Background(), lockers...)
}

func zkLocks(b *testing.B, servers []string, path string, n int) []func(func()) error {
	locks := make([]func(func()) error, n)
	for i := range locks {
		l := zk.NewLock(rawConn(b, servers), path, zk.WorldACL(zk.PermAll))
		locks[i] = func(held func()) error {
			if err := l.Lock(); err != nil {
				return err
			}
			held()
			return l.Unlock()
		}
	}
	return locks
}
