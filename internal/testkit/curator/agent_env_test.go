package curator

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAgentEnv: the credentials reach the agent through its environment
// only when WithDigestAuth gives them, whatever this process's says.
func TestAgentEnv(t *testing.T) {
	t.Setenv(digestEnv, "mallory:inherited")
	digests := func(env []string) []string {
		return slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return !strings.HasPrefix(kv, digestEnv+"=") })
	}
	require.Empty(t, digests(agentEnv("")), "no credentials: none inherited either")
	require.Equal(t, []string{digestEnv + "=alice:secret"}, digests(agentEnv("alice:secret")))
}
