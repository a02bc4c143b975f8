package redisguard

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
	"github.com/zkrecipes/zkrecipes/recipes"
)

type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

func TestPermanent(t *testing.T) {
	for _, tc := range []struct {
		err       error
		permanent bool // for an acquisition
		renewal   bool // ends a renewal too (not a certificate: Refused)
		refusal   bool // errors.Is(recipes.ErrRefused)
	}{
		{redis.ErrClosed, true, true, false},
		{replyError("NOAUTH Authentication required."), true, true, true},
		{replyError("WRONGPASS invalid username-password pair or user is disabled."), true, true, true},
		{replyError("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"), true, true, true},
		{replyError("NOPERM this user has no permissions to run the 'evalsha' command"), true, true, true},
		{replyError("ERR user_script:3: Script attempted to access nonexistent global variable"), true, true, false},
		{replyError("ERR The user executing the script can't run this command or subcommand script: 3c10, on @user_script:1."), true, true, true},
		{replyError("ERR The user executing the script can't access at least one of the keys mentioned in the command arguments script: a2e6, on @user_script:1."), true, true, true},
		{fmt.Errorf("dial: %w", x509.UnknownAuthorityError{}), true, false, true},
		{&tls.CertificateVerificationError{Err: x509.HostnameError{}}, true, false, true},
		{replyError("LOADING Redis is loading the dataset in memory"), false, false, false},
		{replyError("TRYAGAIN Multiple keys request during rehashing of slot"), false, false, false},
		{errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), false, false, false},
		{context.DeadlineExceeded, false, false, false},
	} {
		assert.Equal(t, tc.permanent, errors.Is(Permanent(tc.err), ttl.ErrPermanent), "%v", tc.err)
		assert.Equal(t, tc.renewal, ttl.EndsRenewal(Permanent(tc.err)), "a renewal: %v", tc.err)
		assert.ErrorIs(t, Permanent(tc.err), tc.err)
		assert.Equal(t, tc.refusal, errors.Is(Permanent(tc.err), recipes.ErrRefused), "a refusal: %v", tc.err)
		assert.Equal(t, tc.err.Error(), Permanent(tc.err).Error(), "the text is the server's")
	}
	assert.NoError(t, Permanent(nil))
}

// An eviction check that could not run says why, with advice only where
// the server refused the check for good; the advice names the package's
// ACLRule, not WithoutEvictionCheck (the scripts need INFO too).
func TestCheckError(t *testing.T) {
	errDown := errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
	for _, tc := range []struct {
		cause  error
		advice bool
	}{
		{redis.ErrClosed, false},
		{errDown, false},
		{context.DeadlineExceeded, false},
		{x509.UnknownAuthorityError{}, false},
		{replyError("NOAUTH Authentication required."), false},
		{replyError("WRONGPASS invalid username-password pair or user is disabled."), false},
		{replyError("LOADING Redis is loading the dataset in memory"), false},
		{replyError("NOPERM this user has no permissions to run the 'evalsha' command"), true},
		{replyError("ERR The user executing the script can't run this command or subcommand script: fc08, on @user_script:1."), true},
		{replyError("ERR unknown command 'INFO'"), true},
	} {
		got := checkError(tc.cause, "redislock")
		assert.ErrorIs(t, got, tc.cause)
		assert.Equal(t, tc.advice, got.Error() != tc.cause.Error(), "%v", tc.cause)
		if tc.advice {
			assert.Contains(t, got.Error(), "redislock.ACLRule")
			assert.NotContains(t, got.Error(), "WithoutEvictionCheck")
		}
	}
}

// An ACL's refusal says what the lock needs; other errors are left as
// they are.
func TestExplainACL(t *testing.T) {
	for _, tc := range []struct {
		err     error
		explain bool
	}{
		{replyError("NOPERM this user has no permissions to access one of the keys used as arguments"), true},
		{fmt.Errorf("wrapped: %w", replyError("ERR The user executing the script can't publish to the channel mentioned in the command script: 1f, on @user_script:1.")), true},
		{replyError("WRONGPASS invalid username-password pair or user is disabled."), false},
		{errors.New("NOPERM but not a reply"), false},
	} {
		got := ExplainACL(tc.err, "the keys k*")
		assert.ErrorIs(t, got, tc.err)
		assert.Equal(t, tc.explain, strings.HasSuffix(got.Error(), " (the keys k*)"), "%v", got)
	}
	assert.NoError(t, ExplainACL(nil, "x"))
}
