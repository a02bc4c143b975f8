package grants

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
	"github.com/zkrecipes/zkrecipes/internal/hold"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// fakeQueue is a backend's queue in memory, for Wait's pure logic: each
// attempt answers the next of answers (the last again when they run
// out), and after answer n (from 1) runs after[n].
type fakeQueue struct {
	board   *Board // nil: no grants come
	answers []answer
	after   map[int]func(q *fakeQueue)
	trusts  bool

	watched  bool
	attempts []time.Time // send times
	queued   bool        // the waiter's entry is in the queue
	gaveUp   int
	held     *taken
}

type answer struct {
	o   Outcome
	err error
}

type taken struct {
	token int64
	sent  time.Time
}

func (q *fakeQueue) String() string { return "fake lock" }

func (q *fakeQueue) Watch() *Watcher {
	q.watched = true
	if q.board == nil {
		return nil
	}
	return q.board.Watch("me")
}

func (q *fakeQueue) Attempt(_ context.Context, queue bool, sent time.Time) (Outcome, error) {
	q.attempts = append(q.attempts, sent)
	n := len(q.attempts)
	a := q.answers[min(n, len(q.answers))-1]
	if a.err == nil && !a.o.Acquired && queue {
		q.queued = true
	}
	if f := q.after[n]; f != nil {
		f(q)
	}
	return a.o, a.err
}

func (q *fakeQueue) Trusts(Grant) bool { return q.trusts }

func (q *fakeQueue) Hold(_ context.Context, token int64, sent time.Time) (*hold.Lease, error) {
	q.queued = false // taken: out of the queue
	q.held = &taken{token, sent}
	return nil, nil
}

func (q *fakeQueue) GiveUp(context.Context) {
	q.gaveUp++
	q.queued = false
}

// queuedFor is an attempt that queued the waiter behind a holder whose
// lock lives d more.
func queuedFor(d time.Duration) answer { return answer{o: Outcome{Wait: d}} }

// acquired is an attempt that took the lock with token.
func acquired(token int64) answer { return answer{o: Outcome{Acquired: true, Token: token}} }

// grant hands the lock to the waiter with token, stamped with the send
// time of its last attempt, as a release does.
func grant(token int64) func(q *fakeQueue) {
	return func(q *fakeQueue) {
		q.board.Deliver(fmt.Sprintf("me %d %d", token, Stamp(q.attempts[len(q.attempts)-1])))
	}
}

// confirmedBoard is a board whose subscription the server confirmed.
func confirmedBoard() *Board {
	b := NewBoard()
	b.Confirm()
	return b
}

// testCtx bounds a test: a waiter that misses what should wake it fails
// the test at the end of its context, not at the end of the run.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// A grant wakes the waiter before its timer (a holder's lock that lives
// an hour more), and the waiter holds from the grant's stamp, the send
// time of its last attempt, without another attempt when it trusts the
// grant; with one that confirms it when it does not.
func TestWaitGrantBeforeTimer(t *testing.T) {
	for _, trusts := range []bool{true, false} {
		t.Run(fmt.Sprintf("trusted=%v", trusts), func(t *testing.T) {
			q := &fakeQueue{board: confirmedBoard(), trusts: trusts,
				answers: []answer{queuedFor(time.Hour), acquired(8)},
				after:   map[int]func(*fakeQueue){1: grant(7)}}
			_, err := Wait(testCtx(t), q, true, time.Hour, nil)
			require.NoError(t, err)
			require.NotNil(t, q.held)
			if trusts {
				assert.Len(t, q.attempts, 1, "held from the grant")
				assert.Equal(t, int64(7), q.held.token, "the grant's")
				assert.True(t, q.held.sent.Equal(q.attempts[0]), "held from the stamp's time, the attempt's send time")
			} else {
				assert.Len(t, q.attempts, 2, "confirmed by an attempt")
				assert.Equal(t, taken{8, q.attempts[1]}, *q.held, "the attempt's token, from its send time")
			}
			assert.Zero(t, q.gaveUp)
			assert.False(t, q.queued)
		})
	}
}

// Without a grant, the timer wakes the waiter for another attempt: at
// the holder's remaining time, at most the lock's TTL (so that the queue
// entry is refreshed in time), the TTL when the remaining time is
// unknown; without a watcher (no listener) too.
func TestWaitTimer(t *testing.T) {
	for _, tc := range []struct {
		name          string
		board         *Board
		wait, lockTTL time.Duration
	}{
		{"the holder's remaining time", confirmedBoard(), time.Millisecond, time.Hour},
		{"at most the TTL", confirmedBoard(), time.Hour, time.Millisecond},
		{"the TTL when unknown", confirmedBoard(), 0, time.Millisecond},
		{"no watcher", nil, time.Millisecond, time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := &fakeQueue{board: tc.board, answers: []answer{queuedFor(tc.wait), acquired(3)}}
			_, err := Wait(testCtx(t), q, true, tc.lockTTL, nil)
			require.NoError(t, err)
			require.Len(t, q.attempts, 2)
			assert.Equal(t, taken{3, q.attempts[1]}, *q.held)
			assert.Zero(t, q.gaveUp)
		})
	}
}

// A waiter behind another (Refresh) wakes to refresh its entry within
// Refresh, whatever the holder's remaining time and the lock's TTL: not
// at the holder's expiry (the waiter ahead watches it), not past Refresh.
// A grant still wakes it at once.
func TestWaitBehind(t *testing.T) {
	behind := func(wait, refresh time.Duration) answer {
		return answer{o: Outcome{Wait: wait, Refresh: refresh}}
	}
	t.Run("wakes at its refresh", func(t *testing.T) {
		q := &fakeQueue{board: confirmedBoard(), answers: []answer{behind(time.Hour, time.Millisecond), acquired(3)}}
		_, err := Wait(testCtx(t), q, true, time.Hour, nil)
		require.NoError(t, err)
		require.Len(t, q.attempts, 2)
		assert.Equal(t, taken{3, q.attempts[1]}, *q.held)
	})
	t.Run("not at the holder's expiry", func(t *testing.T) {
		// The holder's lock and the TTL end in a millisecond; the refresh
		// is an hour away: nothing but the context's end wakes it.
		ctx, cancel := context.WithTimeout(testCtx(t), 300*time.Millisecond)
		defer cancel()
		q := &fakeQueue{board: confirmedBoard(), answers: []answer{behind(time.Millisecond, time.Hour), acquired(3)}}
		_, err := Wait(ctx, q, true, time.Millisecond, nil)
		require.ErrorIs(t, err, recipes.ErrNotAcquired)
		assert.Len(t, q.attempts, 1, "no attempt until the refresh")
		assert.Equal(t, 1, q.gaveUp)
	})
	t.Run("a grant wakes it", func(t *testing.T) {
		q := &fakeQueue{board: confirmedBoard(), trusts: true, answers: []answer{behind(time.Hour, time.Hour)},
			after: map[int]func(*fakeQueue){1: grant(7)}}
		_, err := Wait(testCtx(t), q, true, time.Hour, nil)
		require.NoError(t, err)
		assert.Len(t, q.attempts, 1)
		assert.Equal(t, int64(7), q.held.token)
	})
}

// A board whose subscription is not confirmed yet may have missed a
// grant: once it is, the waiter looks again at once, rather than wait for
// its timer (here an hour).
func TestWaitLooksAgainOnceConfirmed(t *testing.T) {
	q := &fakeQueue{board: NewBoard(), answers: []answer{queuedFor(time.Hour), acquired(5)},
		after: map[int]func(*fakeQueue){1: func(q *fakeQueue) { q.board.Confirm() }}}
	_, err := Wait(testCtx(t), q, true, time.Hour, nil)
	require.NoError(t, err)
	assert.Len(t, q.attempts, 2)
	assert.Equal(t, int64(5), q.held.token)
}

// Every way out of a wait but a lease takes the waiter out of the queue:
// its context ending while it waits or backs off, an error that trying
// again cannot mend. A transient error is tried again; when the context
// ends after one, unanswered since, the error says the servers did not
// answer (an outage, not a lock held) and names it.
func TestWaitGivesUp(t *testing.T) {
	transient := answer{err: errors.New("connection reset")}
	permanent := answer{err: ttl.Permanent(errors.New("NOPERM"))}
	for _, tc := range []struct {
		name     string
		answers  []answer
		cancel   bool // the context ends a moment after the last answer
		attempts int
		want     []error
		not      []error
	}{
		{"context ends while waiting", []answer{queuedFor(time.Hour)}, true, 1,
			[]error{recipes.ErrNotAcquired, context.Canceled}, []error{recipes.ErrUnreachable}},
		{"context ends while backing off", []answer{queuedFor(time.Millisecond), transient}, true, 2,
			[]error{recipes.ErrNotAcquired, context.Canceled, recipes.ErrUnreachable, transient.err}, nil},
		{"context ends while waiting after a failure", []answer{transient, queuedFor(time.Hour)}, true, 2,
			[]error{recipes.ErrNotAcquired, context.Canceled}, []error{recipes.ErrUnreachable}},
		{"a permanent error", []answer{queuedFor(time.Millisecond), permanent}, false, 2,
			[]error{recipes.ErrNotAcquired, ttl.ErrPermanent}, []error{recipes.ErrUnreachable}},
		{"transient errors are tried again", []answer{transient, transient, acquired(1)}, false, 3, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(testCtx(t))
			defer cancel()
			q := &fakeQueue{board: confirmedBoard(), answers: tc.answers}
			if tc.cancel {
				q.after = map[int]func(*fakeQueue){len(tc.answers): func(*fakeQueue) { time.AfterFunc(time.Millisecond, cancel) }}
			}
			_, err := Wait(ctx, q, true, time.Hour, nil)
			assert.Len(t, q.attempts, tc.attempts)
			assert.False(t, q.queued, "nothing left in the queue")
			if tc.want == nil {
				require.NoError(t, err)
				assert.Zero(t, q.gaveUp)
				return
			}
			for _, want := range tc.want {
				assert.ErrorIs(t, err, want)
			}
			for _, not := range tc.not {
				assert.NotErrorIs(t, err, not)
			}
			assert.Equal(t, 1, q.gaveUp)
		})
	}
}

// TryAcquire does not watch, does not queue and is refused at once when
// the lock is held (saying why, when the backend says), with nothing to
// take back; an error gives up (its reply lost, it may have taken the
// lock), and is not tried again.
func TestWaitTry(t *testing.T) {
	q := &fakeQueue{board: confirmedBoard(), answers: []answer{{o: Outcome{Wait: time.Hour, Why: fmt.Errorf("%w: the server restarted", recipes.ErrQuiet)}}}}
	_, err := Wait(testCtx(t), q, false, time.Hour, nil)
	assert.ErrorIs(t, err, recipes.ErrLocked)
	assert.ErrorIs(t, err, recipes.ErrQuiet)
	assert.EqualError(t, err, recipes.ErrLocked.Error()+": fake lock: "+recipes.ErrQuiet.Error()+": the server restarted")
	assert.False(t, q.watched)
	assert.False(t, q.queued)
	assert.Zero(t, q.gaveUp)

	q = &fakeQueue{answers: []answer{{err: errors.New("connection reset")}}}
	_, err = Wait(testCtx(t), q, false, time.Hour, nil)
	assert.ErrorIs(t, err, recipes.ErrNotAcquired)
	assert.Len(t, q.attempts, 1)
	assert.Equal(t, 1, q.gaveUp)

	q = &fakeQueue{answers: []answer{acquired(2)}}
	_, err = Wait(testCtx(t), q, false, time.Hour, nil)
	require.NoError(t, err)
	assert.Equal(t, int64(2), q.held.token)
}
