package znode_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/znode"
)

// Revoke wants a node's path: anything else is refused before anything is
// sent (the client here is never connected: a request would fail).
func TestRevokeBadInput(t *testing.T) {
	ctx := context.Background()
	c := &session.Client{}
	for _, tc := range []struct {
		why  string
		c    *session.Client
		path string
		want string
	}{
		{"nil client", nil, "/locks/x/_c_" + uuid + "-lock-0000000001", "nil session client"},
		{"a node's name (a Participant's Name)", c, "_c_" + uuid + "-lock-0000000001", "a node name, where the node's path is wanted"},
		{"empty", c, "", "empty"},
		{"the root", c, "/", "the root"},
		{"trailing slash", c, "/locks/x/", "trailing slash"},
		{"empty segment", c, "/locks//x", "empty segment"},
	} {
		err := znode.Revoke(ctx, tc.c, tc.path)
		assert.ErrorIs(t, err, recipes.ErrInvalidArgument, tc.why)
		assert.ErrorContains(t, err, tc.want, tc.why)
	}
}

func TestRevokeMessage(t *testing.T) {
	assert.Equal(t, "__REVOKE__", znode.RevokeMessage, "Curator's Revoker.REVOKE_MESSAGE")
}
