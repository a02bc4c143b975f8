package redlock

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every command the scripts call is in ACLRule (Redis checks each call
// against the user's ACL), and the rule the doc quotes is ACLRule's.
// Commands the Go code sends are checked against real servers' ACL LOG
// (TestUnderACLRule).
func TestACLRuleCoversTheScripts(t *testing.T) {
	calls := regexp.MustCompile(`redis\.call\(\s*'(\w+)'`)
	var lua strings.Builder
	for _, file := range []string{"scripts.go", "../internal/redisguard/redisguard.go"} {
		src, err := os.ReadFile(file)
		require.NoError(t, err)
		lua.Write(src)
	}
	found := calls.FindAllStringSubmatch(lua.String(), -1)
	require.Greater(t, len(found), 8, "the scripts' calls were found")
	for _, m := range found {
		assert.Contains(t, aclCommands, strings.ToLower(m[1]), "the scripts call %s", m[1])
	}
	assert.NotContains(t, lua.String(), "redis.call(pub", "no command named by a variable")

	doc, err := os.ReadFile("acl.go")
	require.NoError(t, err)
	quoted := regexp.MustCompile(`(?m)^//\t(~app:\* .*)$`).FindStringSubmatch(string(doc))
	require.NotNil(t, quoted, "the doc quotes ACLRule(\"app:\")")
	assert.Equal(t, ACLRule("app:"), quoted[1])
}
