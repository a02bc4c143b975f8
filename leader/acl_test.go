package leader_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/acltest"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// TestCreatorOnlyACL: under a creator-only ACL, a participant without the
// credentials can neither disturb the leader nor campaign, and another
// session of the same user queues and leads after the leader resigns
// (acltest.Run), for both node layouts.
func TestCreatorOnlyACL(t *testing.T) {
	servers := sharedServers(t)
	for _, kind := range []string{"latch", "selector"} {
		t.Run(kind, func(t *testing.T) {
			acltest.Run(t, servers, acltest.Backend{
				New: func(t testing.TB, c *session.Client, path string) recipes.Locker {
					if kind == "latch" {
						return newLatch(t, c, path, "participant")
					}
					e, err := leader.NewSelector(c, path, "participant")
					require.NoError(t, err)
					return e
				},
				Queues: true,
			})
		})
	}
}
