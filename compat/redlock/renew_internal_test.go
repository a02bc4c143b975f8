package redlock

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
)

// scripted is a server that answers every script with val, or fails with
// err; first, while flaky counts down, it fails as a server down does.
type scripted struct {
	val   any
	err   error
	flaky *atomic.Int32
}

func (s scripted) answer() *redis.Cmd {
	if s.flaky != nil && s.flaky.Add(-1) >= 0 {
		return redis.NewCmdResult(nil, down.err)
	}
	return redis.NewCmdResult(s.val, s.err)
}

func (s scripted) Eval(context.Context, string, []string, ...any) *redis.Cmd      { return s.answer() }
func (s scripted) EvalSha(context.Context, string, []string, ...any) *redis.Cmd   { return s.answer() }
func (s scripted) EvalRO(context.Context, string, []string, ...any) *redis.Cmd    { return s.answer() }
func (s scripted) EvalShaRO(context.Context, string, []string, ...any) *redis.Cmd { return s.answer() }
func (s scripted) ScriptExists(context.Context, ...string) *redis.BoolSliceCmd {
	return redis.NewBoolSliceResult(nil, s.err)
}
func (s scripted) ScriptLoad(context.Context, string) *redis.StringCmd {
	return redis.NewStringResult("", s.err)
}

// replyError is a server's error reply.
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

// The servers' answers a renewal meets.
var (
	extended = scripted{val: int64(1)}
	gone     = scripted{val: int64(0)}
	noperm   = scripted{err: replyError("NOPERM this user has no permissions to access one of the keys used as arguments")}
	closed   = scripted{err: redis.ErrClosed}
	untrust  = scripted{err: &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}}
	down     = scripted{err: errors.New("dial tcp 10.0.0.3:6379: connect: connection refused")}
)

// A renewal's error is permanent (the lease ends at once) only when too
// many servers failed for good for a majority, as an acquisition gives
// up; one server's permanent error beside a majority that may still
// answer is tried again, and a certificate refused is always tried again
// (until the lease's deadline).
func TestRenewalError(t *testing.T) {
	for _, tc := range []struct {
		name        string
		servers     []scripted
		ok          bool
		notOurs     bool
		endsRenewal bool
	}{
		{"a majority, one refusing for good", []scripted{extended, noperm, extended}, true, false, false},
		{"one refusing for good, one down", []scripted{extended, noperm, down}, false, false, false},
		{"one refusing for good, one gone", []scripted{extended, closed, gone}, false, false, false},
		{"a certificate refused, one down", []scripted{extended, untrust, down}, false, false, false},
		{"a certificate refused and one for good", []scripted{extended, untrust, noperm}, false, false, false},
		{"certificates refused by two", []scripted{extended, untrust, untrust}, false, false, false},
		{"two refusing for good", []scripted{extended, noperm, closed}, false, false, true},
		{"all refusing for good", []scripted{noperm, noperm, noperm}, false, false, true},
		{"gone on two", []scripted{gone, extended, gone}, false, true, false},
	} {
		l := fakeLock(t, tc.servers...)
		err := holding{l: l, id: "id"}.Renew(context.Background())
		if tc.ok {
			assert.NoError(t, err, tc.name)
			continue
		}
		require.Error(t, err, tc.name)
		assert.Equal(t, tc.notOurs, errors.Is(err, ttl.ErrNotOurs), "%s: %v", tc.name, err)
		assert.Equal(t, tc.endsRenewal, ttl.EndsRenewal(err), "%s: %v", tc.name, err)
		assert.Equal(t, tc.endsRenewal, errors.Is(err, ttl.ErrPermanent), "%s: %v", tc.name, err)
		for _, s := range tc.servers {
			if s.err != nil {
				assert.ErrorIs(t, err, s.err, "%s: each server's error stays visible, marks aside", tc.name)
			}
		}
	}
}

// A lease over three servers, one of which refuses the lock for good,
// outlives a blip of another (a failover, a reset connection): its
// renewal is tried again until the two answer, not ended at the first
// attempt that falls short of a majority.
func TestOneServerRefusingForGoodKeepsTheLease(t *testing.T) {
	for _, bad := range []scripted{noperm, closed, untrust} {
		blip := extended
		blip.flaky = &atomic.Int32{}
		l := fakeLock(t, extended, bad, blip)
		le, err := ttl.Hold(context.Background(), l, 0, false, time.Now(), l.terms, holding{l: l, id: "id"}, &l.c.bg)
		require.NoError(t, err)
		blip.flaky.Store(3) // the next three requests to it fail
		require.Eventually(t, func() bool { return blip.flaky.Load() < 0 || le.Err() != nil }, 10*time.Second, time.Millisecond,
			"renewed past the blip")
		assert.NoError(t, le.Err(), "%v", bad.err)
		require.NoError(t, le.Release(context.Background()))
	}
}

// fakeLock is a lock over servers, with no eviction check.
func fakeLock(t *testing.T, servers ...scripted) *Lock {
	t.Helper()
	rs := make([]Redis, len(servers))
	for i, s := range servers {
		rs[i] = &s // by pointer: two servers answering alike are not the same client
	}
	c, err := NewClient(rs, WithoutEvictionCheck())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	l, err := New(c, "x", WithTTL(300*time.Millisecond))
	require.NoError(t, err)
	return l
}
