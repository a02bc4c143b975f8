package mutex_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// Every bad input of New is recipes.ErrInvalidArgument; a bad path is
// session.ErrInvalidArgument too.
func TestErrorsAreSentinels(t *testing.T) {
	c := connect(t, sharedServers(t))
	for _, tc := range []struct {
		why  string
		c    *session.Client
		path string
		opts []mutex.Option
	}{
		{"nil client", nil, "/x", nil},
		{"the root", c, "/", nil},
		{"nil Option", c, "/x", []mutex.Option{nil}},
		{"revocable with data", c, "/x", []mutex.Option{mutex.WithRevocable(), mutex.WithData([]byte("x"))}},
	} {
		_, err := mutex.New(tc.c, tc.path, tc.opts...)
		assert.ErrorIs(t, err, recipes.ErrInvalidArgument, tc.why)
		assert.False(t, errors.Is(err, recipes.ErrLocked), tc.why)
	}
	for _, p := range []string{"", "x", "/a/", "/a//b", "/a/./b", "/a\x00"} {
		_, err := mutex.New(c, p)
		assert.ErrorIs(t, err, recipes.ErrInvalidArgument, "%q", p)
		assert.ErrorIs(t, err, session.ErrInvalidArgument, "%q", p)
	}
}

func TestString(t *testing.T) {
	m, err := mutex.New(connect(t, sharedServers(t)), "/locks/orders")
	if assert.NoError(t, err) {
		assert.Equal(t, "mutex /locks/orders", m.String())
	}
}
