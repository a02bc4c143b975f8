package redisguard

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
)

type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

func TestPermanent(t *testing.T) {
	for _, tc := range []struct {
		err       error
		permanent bool
	}{
		{redis.ErrClosed, true},
		{replyError("NOAUTH Authentication required."), true},
		{replyError("WRONGPASS invalid username-password pair or user is disabled."), true},
		{replyError("NOPERM this user has no permissions to run the 'evalsha' command"), true},
		{replyError("ERR user_script:3: Script attempted to access nonexistent global variable"), true},
		{replyError("LOADING Redis is loading the dataset in memory"), false},
		{replyError("TRYAGAIN Multiple keys request during rehashing of slot"), false},
		{errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), false},
		{context.DeadlineExceeded, false},
	} {
		assert.Equal(t, tc.permanent, errors.Is(Permanent(tc.err), ttl.ErrPermanent), "%v", tc.err)
		assert.ErrorIs(t, Permanent(tc.err), tc.err)
	}
	assert.NoError(t, Permanent(nil))
}
