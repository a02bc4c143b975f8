package redislock

import "github.com/redis/go-redis/v9"

// The lock's keys share one hash tag, so that a Redis Cluster keeps them in
// one slot: KEYS[1] the lock (its value is the holder's id), KEYS[2] the
// fencing counter, KEYS[3] the queue of waiters (a sorted set by arrival),
// KEYS[4] each waiter's expiry and TTL (a hash). Grants are published on
// KEYS[1] .. ":granted", with the new holder's id.

// prelude is shared by the scripts that may grant the lock.
const prelude = `
local L, F, Q, W = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local t = redis.call('TIME')
local nowus = tonumber(t[1]) * 1000000 + tonumber(t[2])
local nowms = math.floor(nowus / 1000)

-- bump issues the next fencing token: above every earlier one, and never
-- below the server's clock in microseconds, so that tokens keep growing
-- even when the counter is lost (a restart without persistence, eviction)
-- or has expired after a day without use.
local function bump()
  local f = tonumber(redis.call('GET', F) or '0')
  if f < nowus then f = nowus else f = f + 1 end
  redis.call('SET', F, string.format('%d', f), 'PX', 86400000)
  return f
end

-- handoff gives a free lock to the first waiter still alive, skipping those
-- whose entry expired, and tells it; it returns its id, or nil when nobody
-- waits.
local function handoff(me)
  while true do
    local head = redis.call('ZRANGE', Q, 0, 0)[1]
    if not head then return nil end
    redis.call('ZREM', Q, head)
    local info = redis.call('HGET', W, head)
    redis.call('HDEL', W, head)
    if info then
      local sp = string.find(info, ' ')
      if tonumber(string.sub(info, 1, sp - 1)) > nowms then
        redis.call('SET', L, head, 'PX', string.sub(info, sp + 1))
        bump()
        if head ~= me then redis.call('PUBLISH', L .. ':granted', head) end
        return head
      end
    end
  end
end
`

// acquireScript takes the lock for ARGV[1] with a TTL of ARGV[2] ms, or
// finds it already handed to ARGV[1] (then it renews it): {1, token}. When
// it is held by someone else: {0, the holder's remaining TTL in ms}, and
// when ARGV[3] is "1" the caller queues (keeping its place if it was
// queued), its entry alive for ARGV[4] ms. A free lock goes to the first
// live waiter, which may be the caller; a caller that does not queue never
// jumps the queue.
var acquireScript = redis.NewScript(prelude + `
local me, ttl = ARGV[1], ARGV[2]
local holder = redis.call('GET', L)
if not holder then
  holder = handoff(me)
  if not holder then
    redis.call('SET', L, me, 'PX', ttl)
    return {1, bump()}
  end
end
if holder == me then
  redis.call('PEXPIRE', L, ttl)
  redis.call('ZREM', Q, me)
  redis.call('HDEL', W, me)
  return {1, tonumber(redis.call('GET', F))}
end
if ARGV[3] == '1' then
  redis.call('ZADD', Q, 'NX', nowus, me)
  redis.call('HSET', W, me, string.format('%d %s', nowms + tonumber(ARGV[4]), ttl))
  redis.call('PEXPIRE', Q, ARGV[4])
  redis.call('PEXPIRE', W, ARGV[4])
end
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
// else 0.
var renewScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
return redis.call('PEXPIRE', KEYS[1], ARGV[2])
`)
