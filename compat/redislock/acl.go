package redislock

import (
	"fmt"

	"github.com/zkrecipes/zkrecipes/compat/internal/redisguard"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// WithKeyPrefix puts the keys and grant channels of the Client's locks
// under prefix (default none): a lock's keys are prefix+"{name}", prefix+"{name}:fence",
// prefix+"{name}:queue" and prefix+"{name}:quiet", and the channel on
// which its Client's waiters are told of a grant is
// prefix+"zkrecipes:redislock:grants:<the Client's id>" (on a Redis
// Cluster, prefix+"{<tag>}zkrecipes:redislock:grants:<id>", the tag
// putting it in the lock's slot). So an ACL can grant the lock exactly
// its own keys and channels: ACLRule(prefix). The prefix may not contain
// braces (they would change the hash tag), spaces, control characters or
// glob characters (*?[]\): ValidKeyPrefix. Processes that share a lock
// must use the same prefix.
func WithKeyPrefix(prefix string) ClientOption { return func(o *clientOptions) { o.prefix = prefix } }

// ValidKeyPrefix returns nil when NewClient takes prefix (WithKeyPrefix), else
// an error that is recipes.ErrInvalidArgument and says why.
func ValidKeyPrefix(prefix string) error {
	if err := redisguard.CheckPrefix(prefix); err != nil {
		return fmt.Errorf("redislock: %w: %w", recipes.ErrInvalidArgument, err)
	}
	return nil
}

// ACLRule is the Redis ACL rule that lets a user run the locks whose key
// prefix is prefix (WithKeyPrefix), and nothing else: with Redis 7.0 or
// later, add it to a new user's rules, as in
//
//	ACL SETUSER locker on >password <ACLRule("app:")>
//	user locker on >password <ACLRule("app:")>            (redis.conf, or an ACL file)
//
// ACLRule("app:") is
//
//	~app:* &app:* +evalsha +eval +get +set +del +pexpire +pttl +rpush +lpop +lpos +lset +lrem +lrange +time +info +lastsave +publish +spublish +pubsub|numsub +pubsub|shardnumsub +subscribe +ssubscribe +cluster|slots +command +asking +wait +script|load
//
// The keys and channels are the prefix's. The commands are every one
// the lock sends, and every one its scripts call (Redis checks both):
//   - EVALSHA runs the lock's scripts, and EVAL one the server does not
//     have yet (go-redis's Script.Run falls back to it on NOSCRIPT);
//   - in the scripts: GET, SET, DEL, PEXPIRE and PTTL on the lock, fence
//     and quiet keys; RPUSH, LPOP, LPOS, LSET, LREM and LRANGE on the
//     queue; TIME (tokens, the quiet period); INFO (the server's uptime
//     and run id for the quiet period after a restart, and the eviction
//     check's memory settings: WithoutEvictionCheck does not make it
//     unneeded); LASTSAVE (the witness that a released lock's value is
//     of the server's current run; refused, every acquisition takes the
//     full path, with INFO); PUBLISH, or SPUBLISH on a Redis Cluster, of a grant,
//     and PUBSUB NUMSUB, or PUBSUB SHARDNUMSUB, whether its waiter's
//     client listens;
//   - SUBSCRIBE, or SSUBSCRIBE on a Redis Cluster, for a Client's waiters;
//   - a *redis.ClusterClient's CLUSTER SLOTS (its slot map), COMMAND (the
//     commands' key positions; refused, go-redis would ask again before
//     every command) and ASKING (a slot in migration);
//   - WithReplicaAck's WAIT, and SCRIPT LOAD (its scripts go in a
//     pipeline, which does not fall back to EVAL).
//
// An operator may leave out what the deployment does not use: the
// cluster's commands (SPUBLISH, PUBSUB|SHARDNUMSUB, SSUBSCRIBE,
// CLUSTER|SLOTS, COMMAND, ASKING) on one server or under Sentinel, WAIT and SCRIPT|LOAD without
// WithReplicaAck.
//
// AUTH and HELLO need no permission. What else go-redis sends at connect
// is refused under this rule, and go-redis goes on without it: CLIENT
// SETINFO (Redis 7.2 and later; redis.Options.DisableIdentity leaves it
// out) and CLIENT MAINT_NOTIFICATIONS, which ACL LOG shows where the
// server knows them. Not so what the client's options ask for: a DB other
// than 0 sends SELECT, and a ClientName CLIENT SETNAME; add +select or
// +client|setname then.
func ACLRule(prefix string) string { return redisguard.Rule(prefix, true, aclCommands) }

// aclCommands are the commands of ACLRule, in its doc's order.
var aclCommands = []string{
	"evalsha", "eval",
	"get", "set", "del", "pexpire", "pttl", "rpush", "lpop", "lpos", "lset", "lrem", "lrange", "time", "info", "lastsave", "publish", "spublish",
	"pubsub|numsub", "pubsub|shardnumsub",
	"subscribe", "ssubscribe",
	"cluster|slots", "command", "asking",
	"wait", "script|load",
}

// needs says, for an ACL's refusal, what the lock uses and which rule
// grants it.
func (l *Lock) needs() string {
	uses := fmt.Sprintf("the lock uses the keys %s* and the channel %s", l.keys[0], l.channel)
	if l.prefix == "" {
		return uses + ": give it a key prefix its user may use (WithKeyPrefix), and grant the user redislock.ACLRule(prefix)"
	}
	return fmt.Sprintf("%s: its user needs redislock.ACLRule(%q)", uses, l.prefix)
}

// fail marks err permanent when trying again cannot mend it, and says
// what the lock needs when an ACL refused it.
func (l *Lock) fail(err error) error {
	if err == nil {
		return nil // the common case: no advice to format
	}
	return redisguard.Permanent(redisguard.ExplainACL(err, l.needs()))
}
