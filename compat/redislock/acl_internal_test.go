package redislock

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every command the scripts call is in ACLRule (Redis checks each call
// against the user's ACL), and the rule the doc quotes is ACLRule's.
// Commands the Go code sends are checked against a real server's ACL LOG
// (TestUnderACLRule, TestUnderACLRuleOnACluster).
func TestACLRuleCoversTheScripts(t *testing.T) {
	calls := regexp.MustCompile(`redis\.call\(\s*'(\w+)'`)
	var lua strings.Builder
	for _, file := range []string{"scripts.go", "../internal/redisguard/redisguard.go"} {
		src, err := os.ReadFile(file)
		require.NoError(t, err)
		lua.Write(src)
	}
	var called []string
	for _, m := range calls.FindAllStringSubmatch(lua.String(), -1) {
		called = append(called, strings.ToLower(m[1]))
	}
	require.Contains(t, lua.String(), "redis.call(pub, ", "the handoff's publish, PUBLISH or SPUBLISH")
	called = append(called, "publish", "spublish")
	require.Greater(t, len(called), 10, "the scripts' calls were found")
	for _, cmd := range called {
		if cmd == "pubsub" { // subcommands by name: NUMSUB, SHARDNUMSUB
			for _, sub := range regexp.MustCompile(`'(\w*NUMSUB)'`).FindAllStringSubmatch(lua.String(), -1) {
				assert.Contains(t, aclCommands, "pubsub|"+strings.ToLower(sub[1]), "the scripts call PUBSUB %s", sub[1])
			}
			continue
		}
		assert.Contains(t, aclCommands, cmd, "the scripts call %s", strings.ToUpper(cmd))
	}
	assert.Equal(t, len(aclCommands), len(slices.Compact(slices.Sorted(slices.Values(aclCommands)))), "no command twice")

	doc, err := os.ReadFile("acl.go")
	require.NoError(t, err)
	quoted := regexp.MustCompile(`(?m)^//\t(~app:\* .*)$`).FindStringSubmatch(string(doc))
	require.NotNil(t, quoted, "the doc quotes ACLRule(\"app:\")")
	assert.Equal(t, ACLRule("app:"), quoted[1])
}
