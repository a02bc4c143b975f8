package redlock

import (
	"github.com/redis/go-redis/v9"
	"github.com/zkrecipes/zkrecipes/compat/internal/redisguard"
)

// The lock's keys on each server share one hash tag, so that a Redis
// Cluster keeps them in one slot: KEYS[1] the lock (its value is the
// holder's id), KEYS[2] the end of the server's quiet period after a
// restart (redisguard's marker). TTLs are relative (PX), never absolute
// times from the client's clock.

// clock is the server's clock in milliseconds, for quietms.
const clock = `
local function nowms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`

// Codes of acquireScript.
const (
	codeHeld  = 0 // held by someone else
	codeTaken = 1 // taken
	codeQuiet = 2 // the server is quiet: it may have forgotten a holder
)

// acquireScript takes KEYS[1] for ARGV[1] with a TTL of ARGV[2] ms: {1, 0}.
// While the server is quiet (it started less than a TTL ago, and may have
// forgotten a holder), it takes nothing: {2, the ms left}. Held by someone
// else: {0, its remaining TTL in ms}.
var acquireScript = redis.NewScript(redisguard.Lua + clock + `
if redis.call('EXISTS', KEYS[1]) == 1 then return {0, redis.call('PTTL', KEYS[1])} end
local q = quietms(KEYS[2], ARGV[2], nowms())
if q > 0 then return {2, q} end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return {1, 0}
`)

// extendScript extends KEYS[1] to ARGV[2] ms if ARGV[1] holds it: 1, else
// 0. A key the server forgot while it is quiet (it restarted less than a
// TTL ago, and grants it to nobody until then) is put back: 1.
var extendScript = redis.NewScript(redisguard.Lua + clock + `
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
if holder then return 0 end
if quietms(KEYS[2], ARGV[2], nowms()) == 0 then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
`)

// releaseScript deletes KEYS[1] if ARGV[1] holds it: 1, else 0.
var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
return redis.call('DEL', KEYS[1])
`)
