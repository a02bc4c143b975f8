package redislock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/zkrecipes/zkrecipes/compat/internal/redisguard"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// WithReplicaAck makes an acquisition, a handoff and a renewal count only
// once n replicas of the lock's master acknowledged it within timeout:
// each script is followed, on the same connection and in the same round
// trip, by WAIT n timeout. Fewer: the acquisition is not taken (Acquire
// tries again, TryAcquire gives the lock back and fails), and a renewal
// fails (tried again until the lease's deadline). A waiter told of a
// grant confirms it with one more request, acknowledged the same way.
//
// It narrows the window in which a failover to a lagging replica grants
// the lock twice, and costs a replica's round trip per request. It is
// best-effort, as WAIT is: a replica that acknowledged may still not be
// the one promoted, and Redis does not make a write durable or consistent
// by waiting for it. Fencing with the lease's token remains the guarantee.
// It needs a *redis.Client (also from redis.NewFailoverClient) or a
// *redis.ClusterClient.
func WithReplicaAck(n int, timeout time.Duration) Option {
	return func(o *options) { o.acks, o.ackTimeout = n, timeout; o.ackSet = true }
}

// errTooFewAcks: fewer replicas acknowledged a write than WithReplicaAck
// asks for.
var errTooFewAcks = errors.New("too few replicas acknowledged")

// checkAck validates WithReplicaAck's values against the TTL and the
// client.
func checkAck(o options, r Redis) error {
	if !o.ackSet {
		return nil
	}
	switch r.(type) {
	case *redis.Client, *redis.ClusterClient:
	default:
		return fmt.Errorf("redislock: %w: WithReplicaAck needs a *redis.Client or *redis.ClusterClient, not %T", recipes.ErrInvalidArgument, r)
	}
	if o.acks < 1 || o.ackTimeout <= 0 || o.ackTimeout >= o.ttl/3 {
		return fmt.Errorf("redislock: %w: WithReplicaAck(%d, %v): want at least one replica and a timeout above 0 and below a third of the TTL (%v)",
			recipes.ErrInvalidArgument, o.acks, o.ackTimeout, o.ttl/3)
	}
	return nil
}

// run runs script on the lock's master, followed there by WAIT when the
// lock asks for replica acknowledgement; the script's reply, and
// errTooFewAcks (transient) when fewer replicas acknowledged.
func (l *Lock) run(ctx context.Context, script *redis.Script, keys []string, args ...any) (any, error) {
	res, err := l.runOnce(ctx, script, keys, args...)
	if cc, ok := l.c.r.(*redis.ClusterClient); ok && err != nil && staleSlotMap(err) {
		// go-redis reloads its slot map on a redirection it follows, or a
		// minute later: not on a dial error (a master killed or failed
		// over), nor on a redirection in a pipeline to the master it named
		// (WithReplicaAck). The next try must find the slot's master.
		cc.ReloadState(ctx)
	}
	return res, err
}

// staleSlotMap reports whether err says the client's slot map may be
// stale: a network error, or a MOVED or ASK redirection.
func staleSlotMap(err error) bool {
	var re redis.Error
	if errors.Is(err, errTooFewAcks) {
		return false
	}
	if !errors.As(err, &re) {
		return true
	}
	return strings.HasPrefix(re.Error(), "MOVED ") || strings.HasPrefix(re.Error(), "ASK ")
}

// runOnce is run without the cluster's slot map reload.
func (l *Lock) runOnce(ctx context.Context, script *redis.Script, keys []string, args ...any) (any, error) {
	if l.acks == 0 {
		return script.Run(ctx, l.c.r, keys, args...).Result()
	}
	var c *redis.Client
	switch r := l.c.r.(type) {
	case *redis.Client:
		c = r
	case *redis.ClusterClient:
		var err error
		if c, err = r.MasterForKey(ctx, keys[0]); err != nil {
			return nil, err
		}
	}
	for loaded := false; ; loaded = true {
		pipe := c.Pipeline()
		res := script.EvalSha(ctx, pipe, keys, args...)
		wait := pipe.Do(ctx, "WAIT", l.acks, l.ackTimeout.Milliseconds())
		_, _ = pipe.Exec(ctx)
		if err := res.Err(); err != nil {
			if !loaded && strings.HasPrefix(err.Error(), "NOSCRIPT") {
				if err := script.Load(ctx, c).Err(); err != nil {
					return nil, redisguard.Permanent(err)
				}
				continue
			}
			return nil, err
		}
		n, err := wait.Int64()
		switch {
		case err != nil:
			return nil, fmt.Errorf("WAIT: %w", err)
		case n < int64(l.acks):
			return res.Val(), fmt.Errorf("%w: %d of %d within %v", errTooFewAcks, n, l.acks, l.ackTimeout)
		}
		return res.Val(), nil
	}
}
