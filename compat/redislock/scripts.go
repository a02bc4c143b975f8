package redislock

import (
	"github.com/redis/go-redis/v9"
	"github.com/zkrecipes/zkrecipes/compat/internal/redisguard"
)

// The lock's keys share one hash tag, so that a Redis Cluster keeps them in
// one slot: KEYS[1] the lock (its value is the holder's id, its token, the
// run id of the server where its line of holders began and that line's
// witness (redisguard: the same run, told without INFO; 0 when none);
// once released, "-", the last token, the run id and the witness, for a
// day; either ends with the waiter mark, below, when waiters may be
// queued), KEYS[2] the fencing counter as of the last grant of a lock that
// was not released in this run of the server (a new lock, a holder gone,
// a restart), KEYS[3] the queue of waiters (a list, in arrival order; each
// element is a waiter's entry: its id, TTL, stamp, and how to tell it of
// a grant), KEYS[4] the end of the server's quiet period after a restart
// (redisguard). A grant is published on the new holder's client's
// channel, with PUBLISH or (Redis Cluster: the channel is in the lock's
// slot) SPUBLISH. PUBSUB NUMSUB (SHARDNUMSUB) first tells whether the
// waiter's client listens on this server: when it does not (the client is
// gone, its subscription is down, or it is on a replica), the lock goes to
// the next waiter at once. Only a waiter the lock is SET for is told:
// Redis passes what a master publishes on to its replicas, whose
// subscribers it does not count, so a grant published to learn the count
// (as the release did before) could reach a waiter the lock was never
// given to.
//
// A contended acquisition costs ten commands inside the scripts, none of
// them slow: four to queue (GET, LPOS, RPUSH, PEXPIRE; PTTL, and a SET
// that marks the lock's value, too for the first in the queue; the LPOS
// keeps a resent request from queuing its waiter twice) and six to hand
// the lock over at the release (GET, LPOP, TIME, PUBSUB NUMSUB, SET,
// PUBLISH). The token travels in the lock's value from holder to holder,
// one above the last and not below the server's clock.
//
// An uncontended acquisition and release cost six: GET, LASTSAVE, TIME,
// SET to take a lock released in this run of the server, and GET, SET to
// release it. Both run first in their scripts, before the functions of
// the other paths are even defined. The released lock's value is the
// fence (its last token) and the proof that nobody waits (it carries no
// waiter mark, below; a lock in that state is taken at once, nobody
// queues for it but in the server's quiet period, which marks it); and
// that the server has not forgotten a holder since: its witness equals
// LASTSAVE (a value restored from a snapshot carries an earlier run's
// witness, which never does), and LASTSAVE is a TTL old (a value
// replicated from another master may carry a witness equal to a young
// replica's LASTSAVE: see fastAcquire). Any other state (no key: a new lock, a
// holder gone, a restart without data; another run's value, a save
// since, or less than a TTL since the last save) takes the full path:
// the quiet period's marker (with INFO, for the run id and the uptime),
// the counter, the queue.
//
// The waiter mark. A lock's value (a holder's, or a released one) that
// ends with " w" says that waiters may be queued; the release of an
// unmarked holder skips the queue (no LPOP), and the fast acquisition
// takes only an unmarked released value. So every write of KEYS[1] keeps
// one invariant:
//
//	the queue is not empty  =>  the lock has no value, or a marked one.
//
// The writes, each checked against it: the fast acquisition (an unmarked
// released value: the queue is empty) and free (its handoff emptied the
// queue) write unmarked values; so do the full path's grant when its
// handoff found nobody, and the release of an unmarked holder or of a
// marked one whose LPOP found nobody. Every handoff's grant marks (the
// queue may still hold waiters behind the new holder: knowing would cost
// an LLEN per handoff); the enqueue that makes the queue non-empty
// (RPUSH answers 1) marks the value it finds (SET ... KEEPTTL; a holder's,
// or a released one in the quiet period), and one that finds the queue
// non-empty finds the value marked already; a renewal's take-back marks
// (waiters may have queued while its key was gone). A mark may outlive
// the waiters (given up, expired): it costs an LPOP, not safety. A
// replica, a snapshot and an append-only file hold a prefix of the
// master's writes, each script's writes whole, so the invariant holds on
// each of them too.

// prelude is shared by the scripts that may grant the lock.
const prelude = redisguard.Lua + `
local L, F, Q, M = KEYS[1], KEYS[2], KEYS[3], KEYS[4]

-- nowus is the server's clock in microseconds, read once, when first
-- needed.
local clock
local function nowus()
  if not clock then
    local t = redis.call('TIME')
    clock = tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  return clock
end

-- holder splits the lock's value: the holder's id ("-" once released),
-- its token, the run id of the server where its line of holders began
-- ('' when unknown) and the line's witness ('0' when none, as in a value
-- of a release before witnesses); a waiter mark (' w') is dropped.
local function holder(v)
  if not v then return nil, 0, '', '0' end
  if string.sub(v, -2) == ' w' then v = string.sub(v, 1, -3) end
  local id, tok, run, wit = string.match(v, '^(%S+) (%d+) (%w*) (%d+)$')
  if not id then
    id, tok, run = string.match(v, '^(%S+) (%d+) ?(%w*)$')
    wit = '0'
  end
  return id, tonumber(tok) or 0, run or '', wit
end

-- free marks the lock released by a holder whose line began in run, with
-- witness wit, and last token tok: for a day, as the counter. Nobody
-- waits for it (the queue is empty: no waiter mark).
local function free(tok, run, wit)
  redis.call('SET', L, string.format('- %d %s %s', tok, run, wit), 'PX', 86400000)
end

-- listens reports whether channel has a subscriber on this server (not
-- counting those on its replicas).
local function listens(pub, channel)
  local sub = 'NUMSUB'
  if pub == 'SPUBLISH' then sub = 'SHARDNUMSUB' end
  return redis.call('PUBSUB', sub, channel)[2] > 0
end

-- handoff gives the free lock, whose last token was last, to the first
-- waiter whose client still listens, and tells it on its client's grant
-- channel (the waiter's id, the token, and the stamp of its attempt that
-- wrote the entry), unless it is me; it returns the new holder's id and
-- token, or nil when nobody waits. The token is one above the last, and
-- never below the server's clock in microseconds: the last may be stale
-- (a failover to a lagging replica, an older snapshot), and tokens issued
-- since on the lost server were not above the clock. When me releases
-- (mine false), an entry of me is dropped: a duplicate, from a request of
-- its wait that Redis ran twice (a client's retry after a lost reply).
-- The new holder's value carries run, the run id its line began in, and
-- the line's witness wit, and the waiter mark (waiters may be queued
-- behind it). first, when set, is the queue's first entry, already
-- popped.
local function handoff(me, last, mine, run, wit, first)
  local tok
  while true do
    local entry = first or redis.call('LPOP', Q)
    first = nil
    if not entry then return nil end
    local id, ttl, stamp, pub, channel = string.match(entry, '^(%S+) (%d+) (%d+) (%a+) (%S+)$')
    if pub ~= 'SPUBLISH' then pub = 'PUBLISH' end
    if id and (id ~= me or mine) then
      tok = tok or math.max(last + 1, nowus())
      -- A grant is published only with the SET: a subscription on a
      -- replica (made on a stale slot map, or left on a demoted master)
      -- receives what is published here without being counted, and must
      -- never see a grant the lock does not back.
      if id == me or listens(pub, channel) then
        redis.call('SET', L, string.format('%s %d %s %s w', id, tok, run, wit), 'PX', ttl)
        if id ~= me then redis.call(pub, channel, string.format('%s %d %s', id, tok, stamp)) end
        return id, tok
      end
    end
  end
end

-- forget takes the entries of waiter me out of the queue: the one named
-- by entry, or, when entry is '?' (an attempt whose reply was lost may
-- have written one the waiter does not know), every entry of me.
local function forget(me, entry)
  if entry == '' then return end
  if entry ~= '?' then
    redis.call('LREM', Q, 1, entry)
    return
  end
  for _, e in ipairs(redis.call('LRANGE', Q, 0, -1)) do
    if string.sub(e, 1, #me + 1) == me .. ' ' then redis.call('LREM', Q, 1, e) end
  end
end
`

// fastAcquire is the acquire script's first part: it takes a lock
// released in this run of the server (its witness is LASTSAVE) for a
// caller that has no queue entry, once the server's last save (or start)
// is a TTL behind, and leaves the lock's value in v0 for the rest.
//
// Why the TTL: a witness equal to LASTSAVE may also come from another
// server whose LASTSAVE fell in the same second (started together, or a
// master that saved for the full sync of a replica starting then), on a
// value replicated here before this server was promoted. The full path
// keeps a server younger than a TTL quiet (the value names another run);
// LASTSAVE is at or after the server's start, within its second, so a
// save or start less than a TTL (and a second) ago leaves the decision to
// the full path, and the fast path is never weaker than it.
const fastAcquire = `
local v0 = redis.call('GET', KEYS[1])
if v0 and ARGV[8] == '' then
  -- An unmarked released value: nobody waits (a marked one does not
  -- match), and the holder it makes is unmarked.
  local tok, run, wit = string.match(v0, '^%- (%d+) (%w*) (%d+)$')
  local last = wit and wit ~= '0' and redis.pcall('LASTSAVE')
  if last and tonumber(wit) == last then
    local t = redis.call('TIME')
    local s, us = tonumber(t[1]), tonumber(t[2])
    if s * 1000 + math.floor(us / 1000) >= (last + 1) * 1000 + tonumber(ARGV[2]) then
      tok = math.max(tonumber(tok) + 1, s * 1000000 + us)
      redis.call('SET', KEYS[1], string.format('%s %d %s %s', ARGV[1], tok, run, wit), 'PX', ARGV[2])
      return {1, tok}
    end
  end
end
`

// acquireScript takes the lock for ARGV[1] with a TTL of ARGV[2] ms, or
// finds it already handed to ARGV[1] (then it renews it): {1, its token}.
// When it is held by someone else: {0, the holder's remaining TTL in ms
// when the caller is first in the queue (else 0), the caller's queue
// entry}; when it is free but the server may have
// forgotten its holder (a restart less than a TTL ago): {2, the ms until
// it may grant, the entry}. Unless it got the lock, when ARGV[3] is "1"
// the caller queues, the queue alive for ARGV[4] ms, to be told of a
// grant with command ARGV[5] (PUBLISH or SPUBLISH) on channel ARGV[6]
// with stamp ARGV[7] (the caller's, of this attempt); it keeps its place
// when ARGV[8] names its entry of an earlier attempt (or is '?': find
// it). A free lock goes to the first waiter, which may be the caller; a
// caller that does not queue never jumps the queue.
var acquireScript = redis.NewScript(fastAcquire + prelude + `
local me, ttl = ARGV[1], ARGV[2]
local id, tok, run, wit = holder(v0)
-- enqueue queues the caller; when its entry makes the queue non-empty it
-- marks v, the lock's value as it stands (nil: none, or marked already),
-- as the waiter mark's invariant asks.
local function enqueue(v)
  if ARGV[3] ~= '1' then return '', false end
  local entry = string.format('%s %s %s %s %s', me, ttl, ARGV[7], ARGV[5], ARGV[6])
  -- This very request may have run already: go-redis sends a command
  -- again when its connection broke before the reply. Its entry (the
  -- stamp is the attempt's own) is then kept where it is: a second one,
  -- behind the waiters queued in between, would be served after this
  -- waiter was served and gone, holding the lock in the name of nobody
  -- for a TTL.
  local place = redis.call('LPOS', Q, entry)
  if not place and ARGV[8] == '?' then
    forget(me, '?')
  elseif not place and ARGV[8] ~= '' then
    place = redis.call('LPOS', Q, ARGV[8])
  end
  local first = place == 0
  if place then
    redis.call('LSET', Q, place, entry)
  else
    first = redis.call('RPUSH', Q, entry) == 1
    if first and v and string.sub(v, -2) ~= ' w' then
      redis.call('SET', L, v .. ' w', 'KEEPTTL')
    end
  end
  redis.call('PEXPIRE', Q, ARGV[4])
  return entry, first
end
if not id or id == '-' then
  -- No key, or released in another run (restored from a snapshot or an
  -- append-only file, or replicated from an earlier master): the server
  -- may have forgotten a holder, and waiters may be queued.
  local now = nowus()
  local q, cur = quietms(M, ttl, math.floor(now / 1000))
  if q > 0 then
    local entry = enqueue(v0)
    return {2, q, entry}
  end
  -- A grant of a free lock: its token is above the counter's and the
  -- released value's, and not below the server's clock. A new line of
  -- holders begins, with a witness of this run.
  local last = math.max(tonumber(redis.call('GET', F) or '0'), tok, now - 1)
  wit = witness(math.floor(now / 1000000))
  id, tok = handoff(me, last, true, cur, wit)
  if not id then
    id, tok = me, last + 1
    redis.call('SET', L, string.format('%s %d %s %d', me, tok, cur, wit), 'PX', ttl)
  end
  redis.call('SET', F, string.format('%d', tok), 'PX', 86400000)
  if id == me then
    forget(me, ARGV[8])
    return {1, tok}
  end
  v0 = nil -- handed to another waiter, marked
end
if id == me then
  -- Handed to the caller (or taken by an earlier try of this request whose
  -- reply was lost): renewed, with the token of its grant.
  redis.call('PEXPIRE', L, ttl)
  forget(me, ARGV[8])
  return {1, tok}
end
-- Held: the caller queues. The first in the queue times its wait by the
-- holder's remaining TTL (a crashed holder's lock goes to it when the key
-- expires); those behind it are handed the lock by a release, and wait a
-- TTL at most before they look again (0: the lock's TTL).
local entry, first = enqueue(v0)
local wait = 0
if first then wait = redis.call('PTTL', L) end
return {0, wait, entry}
`)

// releaseScript lets the lock go if ARGV[1] holds it and hands it to the
// next waiter: 1, or 0 when it was not ARGV[1]'s.
var releaseScript = redis.NewScript(`
local me = ARGV[1]
local v0 = redis.call('GET', KEYS[1])
if not v0 or string.sub(v0, 1, #me + 1) ~= me .. ' ' then return 0 end
-- Unmarked, nobody can be queued (the waiter mark's invariant).
local marked = string.sub(v0, -2) == ' w'
local first = marked and redis.call('LPOP', KEYS[3])
if not first then
  -- Nobody waits: released, with the holder's token, run id and witness,
  -- unmarked.
  if marked then v0 = string.sub(v0, 1, -3) end
  redis.call('SET', KEYS[1], '-' .. string.sub(v0, #me + 1), 'PX', 86400000)
  return 1
end
` + prelude + `
local _, tok, run, wit = holder(v0)
if not handoff(me, tok, false, run, wit, first) then free(tok, run, wit) end
return 1
`)

// cancelScript takes ARGV[1]'s entry ARGV[2] (or '?': all its entries)
// out of the queue, and releases the lock if it was handed to ARGV[1]
// meanwhile: 1 then, else 0.
var cancelScript = redis.NewScript(prelude + `
forget(ARGV[1], ARGV[2])
local id, tok, run, wit = holder(redis.call('GET', L))
if id ~= ARGV[1] then return 0 end
if not handoff(ARGV[1], tok, false, run, wit) then free(tok, run, wit) end
return 1
`)

// renewScript extends the lock to ARGV[2] ms if ARGV[1] still holds it: 1,
// else 0. A lock the server forgot (it restarted less than a TTL ago, and
// grants nothing to anyone until then: no key, or a released value of an
// earlier run, from a snapshot) is taken back, with the holder's token
// ARGV[3]: 1.
var renewScript = redis.NewScript(redisguard.Lua + `
local v = redis.call('GET', KEYS[1])
local released
if v then
  local id = string.match(v, '^(%S+) ')
  if id == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
  if id ~= '-' then return 0 end
  released = string.match(v, '^%- %d+ (%w*)')
end
local t = redis.call('TIME')
local q, run = quietms(KEYS[2], ARGV[2], tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
-- Released in this run: by its holder, not forgotten.
if q == 0 or released == run then return 0 end
-- Marked: waiters may have queued while the key was gone.
redis.call('SET', KEYS[1], string.format('%s %s %s %d w', ARGV[1], ARGV[3], run, witness(tonumber(t[1]))), 'PX', ARGV[2])
return 1
`)

// probeScript publishes an empty message on the shard channel KEYS[1] from
// the master of its slot (scripts run on masters only) and returns how
// many subscribers got it there.
var probeScript = redis.NewScript(`return redis.call('SPUBLISH', KEYS[1], '')`)
