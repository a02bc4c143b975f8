package redlock

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/zkrecipes/zkrecipes/compat/internal/redisguard"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
	"github.com/zkrecipes/zkrecipes/recipes"
)

var (
	errDown   = errors.New("connection refused")
	errClosed = ttl.Permanent(redis.ErrClosed)
	errEvicts = ttl.Permanent(fmt.Errorf("server x: %w", redisguard.ErrEviction))
)

// The servers that failed an attempt are named when they leave no
// majority possible: the outage, not a lock held.
func TestUnanswered(t *testing.T) {
	down := tally{n: 3, quorum: 2, took: 1, transient: []error{errDown}, permanent: []error{errClosed}}
	err := down.unanswered()
	assert.ErrorIs(t, err, errDown)
	assert.ErrorIs(t, err, redis.ErrClosed)
	assert.NoError(t, tally{n: 3, quorum: 2, held: 2, transient: []error{errDown}}.unanswered(), "held, one down")
	assert.NoError(t, tally{n: 3, quorum: 2, held: 3}.unanswered())
}

// What follows an attempt, from what the servers answered.
func TestNext(t *testing.T) {
	ms := func(d ...time.Duration) []time.Duration { return d }
	ended := recipes.NotAcquired(canceled())
	for _, tc := range []struct {
		name  string
		t     tally
		wait  bool
		ended error
		want  step
		is    []error // the error is each of these
		isNot []error
	}{
		{"a majority took it", tally{n: 3, quorum: 2, took: 2, transient: []error{errDown}}, false, nil, stepHold, nil, nil},
		{"a majority took it, however late", tally{n: 3, quorum: 2, took: 2}, true, ended, stepHold, nil, nil},
		{"a server may evict: refused, whatever the others say", tally{n: 3, quorum: 2, took: 1, held: 1, evicts: errEvicts}, true, nil, stepGiveUp,
			[]error{recipes.ErrNotAcquired, redisguard.ErrEviction}, []error{recipes.ErrLocked}},
		{"a server may evict though the others are a majority: refused", tally{n: 3, quorum: 2, took: 2, evicts: errEvicts}, true, nil, stepGiveUp,
			[]error{recipes.ErrNotAcquired, redisguard.ErrEviction}, []error{recipes.ErrLocked}},
		{"no majority without the servers that cannot answer", tally{n: 3, quorum: 2, took: 1, permanent: []error{errClosed, errClosed}}, true, nil, stepGiveUp,
			[]error{recipes.ErrNotAcquired, redis.ErrClosed}, []error{recipes.ErrLocked}},
		{"a minority that cannot answer: try again", tally{n: 3, quorum: 2, held: 1, permanent: []error{errClosed}}, true, nil, stepRetry, nil, nil},
		{"ctx ended", tally{n: 3, quorum: 2, transient: []error{errDown, errDown, errDown}}, true, ended, stepGiveUp,
			[]error{recipes.ErrNotAcquired, context.Canceled}, []error{recipes.ErrLocked}},
		{"held: wait", tally{n: 3, quorum: 2, held: 3}, true, nil, stepRetry, nil, nil},
		{"held: TryAcquire refused", tally{n: 3, quorum: 2, took: 1, held: 2}, false, nil, stepGiveUp,
			[]error{recipes.ErrLocked}, []error{ErrQuiet, recipes.ErrQuiet}},
		{"quiet servers count as held, and are named", tally{n: 3, quorum: 2, took: 1, quiet: ms(time.Second, time.Second)}, false, nil, stepGiveUp,
			[]error{recipes.ErrLocked, ErrQuiet, recipes.ErrQuiet}, nil},
		{"held and quiet: quiet made the difference", tally{n: 3, quorum: 2, took: 1, held: 1, quiet: ms(time.Second)}, false, nil, stepGiveUp,
			[]error{recipes.ErrLocked, ErrQuiet}, nil},
		{"held by a majority, one quiet: held", tally{n: 5, quorum: 3, held: 3, quiet: ms(time.Second)}, false, nil, stepGiveUp,
			[]error{recipes.ErrLocked}, []error{ErrQuiet}},
		{"one held, one down: not known to be held", tally{n: 3, quorum: 2, took: 1, held: 1, transient: []error{errDown}}, false, nil, stepGiveUp,
			[]error{recipes.ErrNotAcquired, errDown}, []error{recipes.ErrLocked}},
		{"servers down: not held", tally{n: 3, quorum: 2, took: 1, transient: []error{errDown, errDown}}, false, nil, stepGiveUp,
			[]error{recipes.ErrNotAcquired, errDown}, []error{recipes.ErrLocked}},
	} {
		got, err := tc.t.next("redlock x", tc.wait, tc.ended)
		assert.Equal(t, tc.want, got, tc.name)
		if tc.want != stepGiveUp {
			assert.NoError(t, err, tc.name)
			continue
		}
		for _, target := range tc.is {
			assert.ErrorIs(t, err, target, tc.name)
		}
		for _, target := range tc.isNot {
			assert.NotErrorIs(t, err, target, tc.name)
		}
	}
}

func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// An attempt waits for the quiet period of as many servers as a majority
// needs, no more.
func TestQuietWait(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		n     int
		quiet []time.Duration
		want  time.Duration
	}{
		{3, nil, 0},
		{3, []time.Duration{2 * s}, 0},            // two are enough
		{3, []time.Duration{2 * s, 1 * s}, 1 * s}, // the first out of it makes two
		{3, []time.Duration{3 * s, 1 * s, 2 * s}, 2 * s},
		{5, []time.Duration{4 * s, 1 * s, 3 * s}, 1 * s},
		{5, []time.Duration{4 * s, 1 * s, 3 * s, 2 * s}, 2 * s},
	} {
		tl := tally{n: tc.n, quorum: tc.n/2 + 1, quiet: tc.quiet}
		assert.Equal(t, tc.want, tl.quietWait(), "%d servers, quiet %v", tc.n, tc.quiet)
	}
}

// Values are compared without panicking, whatever their type.
func TestSame(t *testing.T) {
	a := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	b := redis.NewClient(&redis.Options{Addr: "127.0.0.1:2"})
	defer a.Close()
	defer b.Close()
	type uncomparable struct {
		redis.Scripter
		tags []string
	}
	assert.True(t, same(a, a))
	assert.False(t, same(a, b))
	assert.False(t, same(uncomparable{a, []string{"x"}}, uncomparable{a, []string{"x"}}), "taken as different")
	assert.False(t, same(a, uncomparable{a, []string{"x"}}))
	assert.Equal(t, "127.0.0.1:1", addr(a))
	assert.Equal(t, "", addr(uncomparable{a, []string{"x"}}), "no Options method")
}
