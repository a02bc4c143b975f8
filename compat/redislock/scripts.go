package redislock

import (
	"github.com/redis/go-redis/v9"
	"github.com/zkrecipes/zkrecipes/compat/internal/redisguard"
)

// The lock's keys share one hash tag, so that a Redis Cluster keeps them in
// one slot: KEYS[1] the lock (its value is the holder's id), KEYS[2] the
// fencing counter, KEYS[3] the queue of waiters (a sorted set by arrival),
// KEYS[4] each waiter's entry (a hash: its expiry, TTL, stamp and grant
// channel), KEYS[5] the end of the server's quiet period after a restart
// (redisguard). A grant is published on the new holder's client's channel.

// prelude is shared by the scripts that may grant the lock.
const prelude = redisguard.Lua + `
local L, F, Q, W, M = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]

-- nowus is the server's clock in microseconds, read once, when first
-- needed: a release with nobody waiting does without it.
local clock
local function nowus()
  if not clock then
    local t = redis.call('TIME')
    clock = tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  return clock
end

-- bump issues the next fencing token: one above the last, and never below
-- the server's clock in microseconds. The clock is what keeps tokens above
-- every earlier one when the counter is lost or comes back older than the
-- tokens issued since (a restart without persistence or from an older
-- snapshot, a failover to a lagging replica, an eviction, a day unused),
-- as long as the lock was granted fewer than a million times a second on
-- average and the clock does not go back.
local function bump()
  local f = tonumber(redis.call('GET', F) or '0')
  if f < nowus() then f = nowus() else f = f + 1 end
  redis.call('SET', F, string.format('%d', f), 'PX', 86400000)
  return f
end

-- handoff gives a free lock to the first waiter still alive, skipping those
-- whose entry expired, and tells it on its client's grant channel (the
-- waiter's id, the token, and the stamp of its attempt that wrote the
-- entry); it returns its id, or nil when nobody waits.
local function handoff(me)
  while true do
    local head = redis.call('ZRANGE', Q, 0, 0)[1]
    if not head then return nil end
    redis.call('ZREM', Q, head)
    local info = redis.call('HGET', W, head)
    redis.call('HDEL', W, head)
    if info then
      local expiry, ttl, stamp, channel = string.match(info, '^(%d+) (%d+) (%d+) (.*)$')
      if expiry and tonumber(expiry) > math.floor(nowus() / 1000) then
        redis.call('SET', L, head, 'PX', ttl)
        local f = bump()
        if head ~= me then
          redis.call('PUBLISH', channel, string.format('%s %d %s', head, f, stamp))
        end
        return head
      end
    end
  end
end
`

// acquireScript takes the lock for ARGV[1] with a TTL of ARGV[2] ms, or
// finds it already handed to ARGV[1] (then it renews it): {1, a new
// token}. When it is held by someone else: {0, the holder's remaining TTL
// in ms}; when it is free but the server may have forgotten its holder
// (a restart less than a TTL ago): {2, the ms until it may grant}. Unless
// it got the lock, when ARGV[3] is "1" the caller queues (keeping its
// place if it was queued), its entry alive for ARGV[4] ms, to be told of a
// grant on channel ARGV[5] with stamp ARGV[6] (the caller's, of this
// attempt). A free lock goes to the first live waiter, which may be the
// caller; a caller that does not queue never jumps the queue.
var acquireScript = redis.NewScript(prelude + `
local me, ttl = ARGV[1], ARGV[2]
local holder = redis.call('GET', L)
local function enqueue()
  if ARGV[3] == '1' then
    redis.call('ZADD', Q, 'NX', nowus(), me)
    redis.call('HSET', W, me, string.format('%d %s %s %s', math.floor(nowus() / 1000) + tonumber(ARGV[4]), ttl, ARGV[6], ARGV[5]))
    redis.call('PEXPIRE', Q, ARGV[4])
    redis.call('PEXPIRE', W, ARGV[4])
  end
end
if not holder then
  local q = quietms(M, ttl, math.floor(nowus() / 1000))
  if q > 0 then
    enqueue()
    return {2, q}
  end
  holder = handoff(me)
  if not holder then
    redis.call('SET', L, me, 'PX', ttl)
    return {1, bump()}
  end
end
if holder == me then
  -- Handed to the caller (or taken by an earlier try of this request whose
  -- reply was lost): it has no token yet, so it gets a new one, above any
  -- the counter may have lost since the grant.
  redis.call('PEXPIRE', L, ttl)
  redis.call('ZREM', Q, me)
  redis.call('HDEL', W, me)
  return {1, bump()}
end
enqueue()
return {0, redis.call('PTTL', L)}
`)

// releaseScript deletes the lock if ARGV[1] holds it and hands it to the
// next waiter: 1, or 0 when it was not ARGV[1]'s.
var releaseScript = redis.NewScript(prelude + `
if redis.call('GET', L) ~= ARGV[1] then return 0 end
redis.call('DEL', L)
handoff(ARGV[1])
return 1
`)

// cancelScript takes ARGV[1] out of the queue, and releases the lock if it
// was handed to ARGV[1] meanwhile: 1 then, else 0.
var cancelScript = redis.NewScript(prelude + `
redis.call('ZREM', Q, ARGV[1])
redis.call('HDEL', W, ARGV[1])
if redis.call('GET', L) ~= ARGV[1] then return 0 end
redis.call('DEL', L)
handoff(ARGV[1])
return 1
`)

// renewScript extends the lock to ARGV[2] ms if ARGV[1] still holds it: 1,
// else 0. A lock the server forgot (it restarted less than a TTL ago, and
// grants nothing to anyone until then) is taken back: 1.
var renewScript = redis.NewScript(redisguard.Lua + `
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
if holder then return 0 end
local t = redis.call('TIME')
if quietms(KEYS[2], ARGV[2], tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)) == 0 then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
`)
