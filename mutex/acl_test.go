package mutex_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/acltest"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// TestCreatorOnlyACL: under a creator-only ACL, a client without the
// credentials can neither disturb the holder nor acquire, and another
// session of the same user queues and acquires (acltest.Run).
func TestCreatorOnlyACL(t *testing.T) {
	acltest.Run(t, sharedServers(t), acltest.Backend{
		New: func(t testing.TB, c *session.Client, path string) recipes.Locker {
			m, err := mutex.New(c, path)
			require.NoError(t, err)
			return m
		},
		Queues: true,
	})
}
