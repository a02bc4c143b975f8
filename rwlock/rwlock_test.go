package rwlock_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/znode"
)

// readersWriters is a read/write oracle: a writer never overlaps a live
// lease of anyone; readers may overlap each other.
type readersWriters struct {
	mu      sync.Mutex
	readers map[recipes.Lease]bool
	writer  recipes.Lease
	overlap atomic.Int64 // most readers seen at once
	errs    []error
}

// tok is a lease's token, for messages.
func tok(l recipes.Lease) int64 {
	token, _ := l.Token()
	return token
}

func (o *readersWriters) enter(l recipes.Lease, write bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	live := func(x recipes.Lease) bool { return x != nil && x.Err() == nil }
	if live(o.writer) {
		o.errs = append(o.errs, fmt.Errorf("acquired (write=%v, token %d) while writer %d held a live lease", write, tok(l), tok(o.writer)))
	}
	if write {
		for r := range o.readers {
			if live(r) {
				o.errs = append(o.errs, fmt.Errorf("writer %d acquired while reader %d held a live lease", tok(l), tok(r)))
			}
		}
		o.writer = l
		return
	}
	o.readers[l] = true
	if n := int64(len(o.readers)); n > o.overlap.Load() {
		o.overlap.Store(n)
	}
}

func (o *readersWriters) exit(l recipes.Lease, write bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if write {
		o.writer = nil
	} else {
		delete(o.readers, l)
	}
}

// contend runs readers and writers on one path through the oracle.
func contend(t *testing.T, servers []string, path string, readers, writers, rounds int, hold time.Duration) *readersWriters {
	o := &readersWriters{readers: map[recipes.Lease]bool{}}
	ctx, cancel := context.WithTimeout(context.Background(), 3*waitLimit)
	defer cancel()
	var wg sync.WaitGroup
	for i := range readers + writers {
		write := i >= readers
		rw := newRW(t, connect(t, servers), path)
		var l recipes.Locker = rw.ReadLock()
		if write {
			l = rw.WriteLock()
		}
		wg.Go(func() {
			for range rounds {
				lease, err := l.Acquire(ctx)
				if !assert.NoError(t, err) {
					return
				}
				o.enter(lease, write)
				time.Sleep(hold)
				o.exit(lease, write)
				if err := lease.Release(ctx); err != nil {
					assert.ErrorIs(t, err, recipes.ErrLockLost)
				}
			}
		})
	}
	wg.Wait()
	return o
}

func TestReadersOverlapWritersExclude(t *testing.T) {
	servers := sharedServers(t)
	o := contend(t, servers, "/rw/oracle", 4, 2, 8, 5*time.Millisecond)
	require.Empty(t, o.errs)
	assert.Greater(t, o.overlap.Load(), int64(1), "readers never held the lock together")
}

func TestReadersHoldTogether(t *testing.T) {
	servers := sharedServers(t)
	ctx := ctxT(t)
	const n = 4
	var leases []recipes.Lease
	for range n {
		l, err := newRW(t, connect(t, servers), "/rw/together").ReadLock().TryAcquire(ctx)
		require.NoError(t, err, "a reader is refused while only readers hold")
		leases = append(leases, l)
	}
	w := newRW(t, connect(t, servers), "/rw/together").WriteLock()
	_, err := w.TryAcquire(ctx)
	assert.ErrorIs(t, err, recipes.ErrLocked, "a writer while readers hold")
	for _, l := range leases {
		require.NoError(t, l.Release(ctx))
	}
	wl, err := w.TryAcquire(ctx)
	require.NoError(t, err)
	_, err = newRW(t, connect(t, servers), "/rw/together").ReadLock().TryAcquire(ctx)
	assert.ErrorIs(t, err, recipes.ErrLocked, "a reader while a writer holds")
	require.NoError(t, wl.Release(ctx))
}

// Downgrade: the write holder takes the read lock, then releases the write
// lock; a writer queued meanwhile does not slip in, and readers may join.
func TestDowngradeWithWriterQueued(t *testing.T) {
	servers := sharedServers(t)
	ctx := ctxT(t)
	const path = "/rw/downgrade"
	holder := newRW(t, connect(t, servers), path)
	observer := connect(t, servers)

	w, err := holder.WriteLock().Acquire(ctx)
	require.NoError(t, err)
	queued := make(chan recipes.Lease, 1)
	go func() {
		l, err := newRW(t, connect(t, servers), path).WriteLock().Acquire(ctx)
		assert.NoError(t, err)
		queued <- l
	}()
	require.Eventually(t, func() bool {
		kids, _, _ := observer.Children(ctx, path)
		return len(kids) == 2
	}, waitLimit, 10*time.Millisecond, "the second writer never queued")

	r, err := holder.ReadLock().Acquire(w.Context()) // downgrade
	require.NoError(t, err)
	wt := zktest.Token(t, w)
	require.NoError(t, w.Release(ctx))

	// The queued writer must not get in while our read lease lives.
	select {
	case l := <-queued:
		t.Fatalf("queued writer (token %d) acquired while the downgraded reader held (write token %d)", zktest.Token(t, l), wt)
	case <-time.After(300 * time.Millisecond): // not a timing assertion: a bounded look for a violation
	}
	other, err := newRW(t, connect(t, servers), path).ReadLock().TryAcquire(ctx)
	assert.ErrorIs(t, err, recipes.ErrLocked, "a new reader queues behind the waiting writer (FIFO)")
	_ = other
	require.NoError(t, r.Release(ctx))
	select {
	case l := <-queued:
		require.NoError(t, l.Release(ctx))
	case <-time.After(waitLimit):
		t.Fatal("the queued writer never acquired after the downgraded reader released")
	}
	require.Eventually(t, func() bool {
		kids, _, _ := observer.Children(ctx, path)
		return len(kids) == 0
	}, waitLimit, 20*time.Millisecond)
}

func TestUpgradeRefused(t *testing.T) {
	servers := sharedServers(t)
	ctx := ctxT(t)
	l := newRW(t, connect(t, servers), "/rw/upgrade")
	r, err := l.ReadLock().Acquire(ctx)
	require.NoError(t, err)
	_, err = l.WriteLock().Acquire(r.Context())
	assert.ErrorIs(t, err, rwlock.ErrUpgrade)
	assert.ErrorIs(t, err, recipes.ErrNotAcquired)
	_, err = l.WriteLock().TryAcquire(r.Context())
	assert.ErrorIs(t, err, rwlock.ErrUpgrade)
	// With an unrelated context it is just another contender, blocked by
	// the reader.
	_, err = l.WriteLock().TryAcquire(ctx)
	assert.ErrorIs(t, err, recipes.ErrLocked)
	require.NoError(t, r.Release(ctx))
}

func TestParticipants(t *testing.T) {
	servers := sharedServers(t)
	ctx := ctxT(t)
	const path = "/rw/participants"
	a := newRW(t, connect(t, servers), path)
	r1, err := a.ReadLock().Acquire(ctx)
	require.NoError(t, err)
	go func() {
		l, err := newRW(t, connect(t, servers), path).WriteLock().Acquire(ctx)
		if err == nil {
			_ = l.Release(ctx)
		}
	}()
	var parts []znode.Participant
	require.Eventually(t, func() bool {
		parts, err = a.Participants(ctx)
		return err == nil && len(parts) == 2
	}, waitLimit, 10*time.Millisecond)
	assert.Equal(t, rwlock.ReadName, parts[0].Kind)
	assert.True(t, parts[0].Holder)
	assert.Equal(t, rwlock.WriteName, parts[1].Kind)
	assert.False(t, parts[1].Holder)
	require.NoError(t, r1.Release(ctx))
}

func TestBadInput(t *testing.T) {
	c := connect(t, sharedServers(t))
	for _, tc := range []struct {
		why  string
		c    *session.Client
		path string
		opts []rwlock.Option
	}{
		{"nil client", nil, "/x", nil},
		{"empty path", c, "", nil},
		{"relative path", c, "rel", nil},
		{"the root", c, "/", nil},
		{"trailing slash", c, "/a/", nil},
		{"empty segment", c, "/a//b", nil},
		{"nil Option", c, "/x", []rwlock.Option{nil}},
		{"revocable with data", c, "/x", []rwlock.Option{rwlock.WithRevocable(), rwlock.WithData([]byte("x"))}},
	} {
		_, err := rwlock.New(tc.c, tc.path, tc.opts...)
		assert.ErrorIs(t, err, recipes.ErrInvalidArgument, tc.why)
	}
}

func TestString(t *testing.T) {
	rw, err := rwlock.New(connect(t, sharedServers(t)), "/locks/x")
	require.NoError(t, err)
	assert.Equal(t, "rwlock /locks/x", rw.String())
	assert.Equal(t, "rwlock /locks/x (read)", rw.ReadLock().String())
	assert.Equal(t, "rwlock /locks/x (write)", rw.WriteLock().String())
}

func TestLookaheadReadersWriters(t *testing.T) {
	servers := sharedServers(t)
	o := &readersWriters{readers: map[recipes.Lease]bool{}}
	ctx := ctxT(t)
	var wg sync.WaitGroup
	for i := range 6 {
		write := i >= 3
		rw, err := rwlock.New(connect(t, servers), "/rw/lookahead", rwlock.WithLookahead(true))
		require.NoError(t, err)
		var l recipes.Locker = rw.ReadLock()
		if write {
			l = rw.WriteLock()
		}
		wg.Go(func() {
			for range 10 {
				lease, err := l.Acquire(ctx)
				if !assert.NoError(t, err) {
					return
				}
				o.enter(lease, write)
				time.Sleep(2 * time.Millisecond)
				o.exit(lease, write)
				assert.NoError(t, lease.Release(ctx))
			}
		})
	}
	wg.Wait()
	require.Empty(t, o.errs)
}
