// Package redisguard is what the Redis locks of compat (redislock, redlock)
// share to keep their promise when a server forgets: a quiet period after
// a restart, in Lua, and a check of the eviction settings.
//
// # A server that may have forgotten a lock grants nothing
//
// A Redis that restarts without its data (no persistence, or an older
// snapshot) has forgotten every lock, while their holders still trust their
// leases for up to a TTL. So a lock's scripts keep a marker key in the
// lock's slot holding the end of its quiet period, in the server's
// milliseconds, and the server's run id. When the marker is missing (the
// first use of the lock since the server started or lost its data, or a
// day unused) or is another run's (restored from a snapshot or an
// append-only file that did not have the lock), the script reads the
// server's uptime (INFO, which scripts may call) and sets the quiet
// period's end to the server's start plus the TTL: a server that
// started less than a TTL ago grants nothing until then, when every lease
// it may have forgotten has ended by its holder's own clock. A holder whose
// key is missing while its server is quiet takes it back (nobody else can
// have been granted it since the restart), so a restart does not end a
// lease that is still renewed. This is Redlock's "delayed restart" done by
// the clients, with no server setting. It costs a TTL of waiting after a
// restart, and covers restarts, with or without persistence; not a
// FLUSHALL, or a failover to a lagging replica (its uptime says nothing of
// what it missed). The run id is read on every grant of a free lock and
// every renewal that finds its key gone: INFO costs the server about 15 µs.
//
// # The same run, told without INFO
//
// INFO server costs the server a few microseconds of formatting, more
// than a lock's uncontended acquisition does otherwise. A script that
// only needs to know that a value was written in the server's current
// run keeps a witness in it instead: witness(now) is LASTSAVE (the server
// sets it to the time it starts, in seconds, and to the time of each
// save) when the clock is at least a second past it, else 0, no witness.
// A witness w read in one run equals LASTSAVE in no later run: a later
// run started after w + 1, so its LASTSAVE (its start, or a save since)
// is above w. Equal means the same run, with no save since; a save only
// sends the next acquisition to the full path, which writes the new
// witness. A witness copied from a master to a replica that is promoted
// may equal its LASTSAVE: by chance, or because both fell in one second
// (servers started together, a master's save for the full sync of a
// replica that just started). On a replica promoted less than a TTL after
// it started the full path is quiet, so a script that trusts a witness
// does so only once LASTSAVE (at or after the start, within its second)
// is a second and a TTL behind the clock; on an older replica the full
// path does no better (the run id says another run, and it has no quiet
// period): a failover to a lagging replica is not covered. Nor is a
// server clock set back across a restart by more than the time between
// the witness and the restart.
//
// # Eviction is a setting
//
// A Redis with a memory limit (maxmemory) and a policy other than
// noeviction may evict a lock's keys under memory pressure (they have
// TTLs, so the volatile-* policies may pick them too), and another client
// can then be granted a lock whose holder still trusts it. Check reads both
// settings (from INFO: it works where CONFIG is refused) and refuses such a
// server with an error that names the setting and the fix.
package redisguard

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
	"github.com/zkrecipes/zkrecipes/recipes/refusal"
)

// Lua defines runid(): the server's run id (INFO server, read once per
// script call; a restart changes it), and quietms(marker, ttl, nowms): how
// many milliseconds the server still grants nothing, 0 when it may, and
// the run id. nowms is the server's clock in ms (redis.call('TIME')); ttl
// is the lock's TTL in ms. The marker outlives its last use by a day.
const Lua = `
local serverinfo
local function runid()
  if not serverinfo then serverinfo = redis.call('INFO', 'server') end
  -- A plain find: a pattern tried at every offset of INFO's kilobytes
  -- costs the server microseconds.
  local i = string.find(serverinfo, 'run_id:', 1, true)
  return i and string.match(serverinfo, '^%w+', i + 7) or ''
end
local function quietms(marker, ttl, nowms)
  local run = runid()
  local info = serverinfo
  local q
  local m = redis.call('GET', marker)
  if m then
    local mq, mrun = string.match(m, '^(%d+) (%w*)$')
    if mrun == run then q = tonumber(mq) end
  end
  if q then
    redis.call('PEXPIRE', marker, 86400000)
  else
    -- A marker of another run of the server (restored from a snapshot or
    -- an append-only file) says nothing of what this run forgot.
    local up = tonumber(string.match(info, 'uptime_in_seconds:(%d+)')) or 0
    -- uptime counts whole seconds: the server started at most up s ago.
    q = nowms - up * 1000 + tonumber(ttl)
    redis.call('SET', marker, string.format('%d %s', q, run), 'PX', 86400000)
  end
  q = q - nowms
  if q > 0 then return q, run end
  return 0, run
end
-- witness(nows) is the server's last save time (LASTSAVE, in seconds) when
-- the clock, nows seconds, is a second or more past it; else 0 (also when
-- the server refuses LASTSAVE). A value that carries a witness read in an
-- earlier run of the server never equals LASTSAVE in a later one (the
-- package doc: the same run, told without INFO).
local function witness(nows)
  local last = redis.pcall('LASTSAVE')
  if type(last) == 'number' and nows >= last + 1 then return last end
  return 0
end
`

// ErrEviction: the server may evict the lock's keys.
var ErrEviction = errors.New("the server may evict the lock's keys")

// settingsScript reads the memory limit and the eviction policy.
var settingsScript = redis.NewScript(`
local m = redis.call('INFO', 'memory')
return {string.match(m, 'maxmemory:(%d+)') or '', string.match(m, 'maxmemory_policy:([%w-]+)') or ''}
`)

// Check reads r's maxmemory and maxmemory-policy and returns an error that
// is ErrEviction when the server may evict keys with a TTL, or the error
// that kept it from reading them: as it is when the client could not talk
// to the server (unreachable, closed, not authenticated, a certificate
// refused: no advice applies), with advice when the server refused the
// check. pkg names the lock's package ("redislock") for the advice: its
// WithoutEvictionCheck and ACLRule.
func Check(ctx context.Context, r redis.Scripter, pkg string) error {
	res, err := settingsScript.Run(ctx, r, nil).StringSlice()
	if err != nil {
		return checkError(err, pkg)
	}
	skip := pkg + ".WithoutEvictionCheck()"
	if len(res) != 2 || res[1] == "" {
		return fmt.Errorf("cannot read the server's maxmemory-policy (INFO memory answered %q): check that it is noeviction, or that maxmemory is 0, then pass %s", res, skip)
	}
	limit, _ := strconv.ParseInt(res[0], 10, 64)
	if limit == 0 || res[1] == "noeviction" {
		return nil
	}
	return fmt.Errorf("%w: maxmemory-policy is %s with maxmemory %d bytes, so under memory pressure Redis may delete a held lock and grant it to another client while its holder still trusts it: set maxmemory-policy noeviction (CONFIG SET maxmemory-policy noeviction, and in redis.conf), or pass %s to accept the risk",
		ErrEviction, res[1], limit, skip)
}

// checkError is Check's error when its script failed with err: err alone
// when the client could not talk to the server, else (the server refused
// the script: an ACL, a renamed command) what the lock needs. Skipping the
// check would not help then: the lock's scripts call INFO too (the quiet
// period).
func checkError(err error, pkg string) error {
	var re redis.Error
	if !errors.As(err, &re) || !errors.Is(Permanent(err), ttl.ErrPermanent) ||
		strings.HasPrefix(re.Error(), "NOAUTH") || strings.HasPrefix(re.Error(), "WRONGPASS") {
		return err
	}
	return fmt.Errorf("the server refused the eviction check, a script that reads INFO memory (%w): the lock needs the commands %s.ACLRule lists, INFO among them (its scripts read the server's uptime and run id)", err, pkg)
}

// Once caches a successful Check: a server is checked at its first use.
// Callers that come while a check runs run their own (under their own
// contexts) rather than wait on another's.
type Once struct{ done atomic.Bool }

// Check runs check unless one has already succeeded.
func (o *Once) Check(check func() error) error {
	if o.done.Load() {
		return nil
	}
	if err := check(); err != nil {
		return err
	}
	o.done.Store(true)
	return nil
}

// Permanent marks, with ttl.Permanent, the errors that trying again
// cannot mend: a closed client, a refused authentication or permission
// (also a command or key refused to a script by the user's ACL), a script
// the server rejects; and, with ttl.Refused (an acquisition ends at it, a
// renewal tries again until the lease's deadline: the pool's connections
// may still work), a TLS handshake refused either way. Refusals (the
// module's one rule, package refusal) are marked so that
// errors.Is(err, recipes.ErrRefused) holds. Others (an unreachable
// server, a timeout, a LOADING or TRYAGAIN reply) stay transient.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, redis.ErrClosed) {
		return ttl.Permanent(err)
	}
	switch r, _ := refusal.Of(err); {
	case r.TLS():
		return ttl.Refused(refusal.Mark(err))
	case r != refusal.NotRefused:
		return ttl.Permanent(refusal.Mark(err))
	}
	var re redis.Error
	if errors.As(err, &re) {
		msg := re.Error()
		for _, prefix := range permanentReplies {
			if strings.HasPrefix(msg, prefix) {
				return ttl.Permanent(err)
			}
		}
	}
	return err
}

// permanentReplies are the error replies other than refusals that the
// same request would get again.
var permanentReplies = []string{
	"ERR user_script", "ERR Error running script", "ERR Error compiling script", // a script the server refuses
	"ERR unknown command", "WRONGTYPE",
}

// aclScript begins the error of a script whose command, key or channel the
// user's ACL refused (Redis 7).
const aclScript = "ERR The user executing the script can't"

// ExplainACL adds needs (what the lock's user must be granted: its keys
// and the rule) to err when err is an ACL's refusal, which names neither.
func ExplainACL(err error, needs string) error {
	var re redis.Error
	if !errors.As(err, &re) || !(strings.HasPrefix(re.Error(), "NOPERM") || strings.HasPrefix(re.Error(), aclScript)) {
		return err
	}
	return fmt.Errorf("%w (%s)", err, needs)
}
