package mutex_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

func TestErrorsAreSentinels(t *testing.T) {
	_, err := mutex.New(nil, "/x")
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	c := connect(t, sharedServers(t))
	for _, p := range []string{"", "x", "/a/", "/a//b", "/a/./b", "/a\x00"} {
		_, err := mutex.New(c, p)
		assert.ErrorIs(t, err, recipes.ErrInvalidArgument, "%q", p)
		assert.ErrorIs(t, err, session.ErrInvalidArgument, "%q", p)
	}
	_, err = mutex.New(c, "/")
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument, "the root cannot be a lock path")
	_, err = mutex.New(c, "/x", nil)
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	assert.False(t, errors.Is(err, recipes.ErrLocked))
}
