package redisguard

import (
	"fmt"
	"strings"
)

// CheckPrefix refuses a key prefix that a lock cannot use, saying why: a
// brace (the keys' hash tag would change: a Redis Cluster would scatter a
// lock's keys, and a sharded grant channel would leave the lock's slot),
// or a space, a control character or a glob character (*?[]\), which an
// ACL's key pattern could not name as it is. The empty prefix is fine.
func CheckPrefix(prefix string) error {
	if strings.ContainsAny(prefix, "{}") {
		return fmt.Errorf("key prefix %q: no braces: they would change the hash tag of the lock's keys", prefix)
	}
	if strings.ContainsFunc(prefix, func(r rune) bool { return r <= ' ' || r == 0x7f || strings.ContainsRune(`*?[]\`, r) }) {
		return fmt.Errorf("key prefix %q: no spaces, control characters or glob characters (*?[]\\): an ACL rule names the keys by the prefix and *", prefix)
	}
	return nil
}

// Rule is an ACL rule, as ACL SETUSER and redis.conf's "user" lines take
// it after the user's name and password, that grants the keys starting
// with prefix, the channels too when channels is set, and the commands:
// "~<prefix>* [&<prefix>*] +cmd ...". It adds to a user's rules: a new
// user has no keys, channels (Redis 7's default) or commands, so it then
// grants exactly these.
func Rule(prefix string, channels bool, commands []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "~%s*", prefix)
	if channels {
		fmt.Fprintf(&b, " &%s*", prefix)
	}
	for _, c := range commands {
		b.WriteString(" +" + c)
	}
	return b.String()
}
