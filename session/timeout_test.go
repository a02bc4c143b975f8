package session_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/session"
)

// A session's Timeout is what the server granted, not what was asked: a
// timeout past the server's maxSessionTimeout is clamped to it.
func TestSessionTimeoutIsGranted(t *testing.T) {
	const asked = 2 * time.Hour // past any test server's maxSessionTimeout
	c := connect(t, zktest.Shared(t), session.WithSessionTimeout(asked))
	s, err := c.Session(ctxT(t))
	require.NoError(t, err)
	assert.Less(t, s.Timeout(), asked, "the server clamps it")
	assert.Positive(t, s.Timeout())
	assert.Equal(t, c.SessionTimeout(), s.Timeout(), "the client's and the session's agree")
}

// WithServerTick is checked against the session timeout the server
// granted, not the one asked for: asked for twice the tick, granted less
// (the server's maxSessionTimeout clamps it), Connect fails and says so.
func TestServerTickCheckedAgainstTheGrantedTimeout(t *testing.T) {
	granted := connect(t, zktest.Shared(t), session.WithSessionTimeout(2*time.Hour)).SessionTimeout()
	tick := granted/2 + time.Second
	_, err := session.Connect(ctxT(t), zktest.Shared(t), session.WithLogger(nil),
		session.WithSessionTimeout(2*tick), session.WithServerTick(tick))
	require.ErrorIs(t, err, session.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "the session timeout the server granted ("+granted.String()+")")

	c := connect(t, zktest.Shared(t), session.WithSessionTimeout(granted), session.WithServerTick(granted/2))
	assert.Equal(t, granted, c.SessionTimeout(), "granted twice the tick: accepted")
}
