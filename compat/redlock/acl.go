package redlock

import (
	"fmt"

	"github.com/zkrecipes/zkrecipes/compat/internal/redisguard"
)

// WithKeyPrefix puts the keys of the Client's locks under prefix on every
// server (default none): they are prefix+"{name}" and
// prefix+"{name}:quiet". So an ACL can grant the locks exactly their own
// keys: ACLRule(prefix). The
// prefix may not contain braces (they would change the hash tag), spaces,
// control characters or glob characters (*?[]\): ValidKeyPrefix.
// Processes that share a lock must use the same prefix.
func WithKeyPrefix(prefix string) ClientOption { return func(o *clientOptions) { o.prefix = prefix } }

// ValidKeyPrefix returns nil when NewClient takes prefix (WithKeyPrefix), else
// an error that is recipes.ErrInvalidArgument and says why.
func ValidKeyPrefix(prefix string) error {
	if err := redisguard.CheckPrefix(prefix); err != nil {
		return invalid("%w", err)
	}
	return nil
}

// ACLRule is the Redis ACL rule that lets a user run the locks whose key
// prefix is prefix (WithKeyPrefix), and nothing else: with Redis 7.0 or
// later, add it to a new user's rules on every server, as in
//
//	ACL SETUSER locker on >password <ACLRule("app:")>
//	user locker on >password <ACLRule("app:")>            (redis.conf, or an ACL file)
//
// ACLRule("app:") is
//
//	~app:* +evalsha +eval +get +set +exists +pexpire +pttl +del +time +info
//
// The keys are the prefix's; the lock uses no channel. The commands are
// every one the lock sends, and every one its scripts call (Redis checks
// both): EVALSHA runs the lock's scripts, and EVAL one the server does
// not have yet (go-redis's Script.Run falls back to it on NOSCRIPT); in
// the scripts, GET, SET, EXISTS, PEXPIRE, PTTL and DEL on the lock and
// quiet keys, TIME and INFO (the server's uptime and run id for the quiet
// period after a restart, and the eviction check's memory settings:
// WithoutEvictionCheck does not make INFO unneeded).
//
// AUTH and HELLO need no permission. What else go-redis sends at connect
// is refused under this rule, and go-redis goes on without it: CLIENT
// SETINFO (Redis 7.2 and later; redis.Options.DisableIdentity leaves it
// out) and CLIENT MAINT_NOTIFICATIONS, which ACL LOG shows where the
// server knows them. Not so what the client's options ask for: a DB other
// than 0 sends SELECT, and a ClientName CLIENT SETNAME; add +select or
// +client|setname then.
func ACLRule(prefix string) string { return redisguard.Rule(prefix, false, aclCommands) }

// aclCommands are the commands of ACLRule, in its doc's order.
var aclCommands = []string{"evalsha", "eval", "get", "set", "exists", "pexpire", "pttl", "del", "time", "info"}

// needs says, for an ACL's refusal, what the lock uses and which rule
// grants it.
func (l *Lock) needs() string {
	uses := fmt.Sprintf("the lock uses the keys %s*", l.keys[0])
	if l.c.prefix == "" {
		return uses + ": give it a key prefix its user may use (WithKeyPrefix), and grant the user redlock.ACLRule(prefix)"
	}
	return fmt.Sprintf("%s: its user needs redlock.ACLRule(%q)", uses, l.c.prefix)
}
