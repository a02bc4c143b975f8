package redislock

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/zkrecipes/zkrecipes/compat/internal/grants"
)

// subscriber is a Client's subscription to one grant channel of its own,
// shared by its waiters on every lock that publishes there (every lock of
// the Client on one server; on a Redis Cluster, every lock in one slot): a
// release that hands a lock to one of them publishes there, so a grant
// wakes one client, not every client waiting on the lock. Its waiters wait
// on its board, which is ready once the server confirmed the
// subscription.
type subscriber struct {
	r       Redis
	channel string
	sharded bool // SSUBSCRIBE (Redis Cluster), else SUBSCRIBE
	board   *grants.Board

	mu   sync.Mutex
	ps   *redis.PubSub // made at the first watch; replaced when a shard moves
	loop chan struct{} // closed when the receive loop is over
}

func newSubscriber(r Redis, channel string, sharded bool) *subscriber {
	return &subscriber{r: r, channel: channel, sharded: sharded, board: grants.NewBoard()}
}

// watch registers waiter id, subscribing to the grant channel first if
// needed.
func (s *subscriber) watch(id string) *grants.Watcher {
	s.mu.Lock()
	subscribe := s.ps == nil && !s.board.Closed()
	var ps *redis.PubSub
	if subscribe {
		ps = s.newPubSub()
		s.ps, s.loop = ps, make(chan struct{})
		go s.receive(ps)
	}
	w := s.board.Watch(id)
	s.mu.Unlock()
	if subscribe {
		s.subscribe(ps)
	}
	return w
}

// newPubSub is a subscription with no channel yet: no I/O.
func (s *subscriber) newPubSub() *redis.PubSub {
	if s.sharded {
		return s.r.SSubscribe(context.Background())
	}
	return s.r.Subscribe(context.Background())
}

// subscribe subscribes ps to the channel (a sharded one on the master of
// the channel's slot). An error is retried by go-redis when it reconnects;
// until the server confirms, waiters rely on their timers.
func (s *subscriber) subscribe(ps *redis.PubSub) {
	if s.sharded {
		_ = ps.SSubscribe(context.Background(), s.channel)
		return
	}
	_ = ps.Subscribe(context.Background(), s.channel)
}

// receive delivers what the subscription brings until it is closed. A
// sharded subscription whose slot moved to another shard (the server
// unsubscribes it, or refuses it with a redirection) is opened again, on
// the slot's new master; one that a stale slot map put on a replica is
// moved, with a backoff, until the master counts it.
func (s *subscriber) receive(ps *redis.PubSub) {
	defer close(s.loop)
	backoff, moveBackoff := retryBase, retryBase
	for {
		msg, err := ps.Receive(context.Background())
		if err != nil {
			if s.board.Closed() {
				return
			}
			time.Sleep(backoff) // go-redis reconnects and resubscribes at the next Receive
			backoff = min(2*backoff, retryCap)
			var re redis.Error
			if s.sharded && errors.As(err, &re) {
				if ps = s.reopen(ps); ps == nil {
					return
				}
			}
			continue
		}
		backoff = retryBase
		switch m := msg.(type) {
		case *redis.Subscription:
			switch m.Kind {
			case "subscribe", "ssubscribe":
				s.board.Confirm()
				if s.sharded && !s.onMaster() {
					// Subscribed on a replica, on a stale slot map: a
					// release skips our waiters (it counts subscribers on
					// the master), so move once go-redis has reloaded it.
					if cc, ok := s.r.(*redis.ClusterClient); ok {
						cc.ReloadState(context.Background())
					}
					time.Sleep(moveBackoff)
					moveBackoff = min(2*moveBackoff, retryCap)
					if ps = s.reopen(ps); ps == nil {
						return
					}
					continue
				}
				moveBackoff = retryBase
			case "sunsubscribe": // the slot moved: the server let us go
				if ps = s.reopen(ps); ps == nil {
					return
				}
			}
		case *redis.Message:
			id := s.board.Deliver(m.Payload) // "" for a handoff's empty message
			if hook := testHooks.delivered.Load(); hook != nil && id != "" {
				(*hook)(s, id)
			}
		}
	}
}

// onMaster reports whether the sharded subscription is on the master of
// its slot, as far as a probe can tell: false only when the master counted
// no subscriber to our channel (an error, or a closed subscriber, says
// nothing). go-redis subscribes on the master its slot map names, which
// after a failover may be the old master, now a replica that serves
// SSUBSCRIBE.
func (s *subscriber) onMaster() bool {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	n, err := probeScript.Run(ctx, s.r, []string{s.channel}).Int64()
	return err != nil || n > 0 || s.board.Closed()
}

// probeTimeout bounds onMaster's request.
const probeTimeout = 2 * time.Second

// reopen replaces the sharded subscription ps with a new one; nil once the
// subscriber is closed. Grants published meanwhile are missed: the
// waiters' timers cover them.
func (s *subscriber) reopen(ps *redis.PubSub) *redis.PubSub {
	_ = ps.Close()
	s.mu.Lock()
	if s.board.Closed() {
		s.mu.Unlock()
		return nil
	}
	ps = s.newPubSub()
	s.ps = ps
	s.mu.Unlock()
	s.subscribe(ps)
	return ps
}

// close ends the subscription and waits for the receive loop.
func (s *subscriber) close() error {
	s.mu.Lock()
	if !s.board.Close() {
		s.mu.Unlock()
		return nil
	}
	ps, loop := s.ps, s.loop
	s.mu.Unlock()
	if ps == nil {
		return nil
	}
	err := ps.Close()
	<-loop
	return err
}
