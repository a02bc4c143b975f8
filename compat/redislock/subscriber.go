package redislock

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/zkrecipes/zkrecipes/compat/internal/grants"
	"github.com/zkrecipes/zkrecipes/compat/internal/redisguard"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
)

// subscriber is a Client's subscription to one grant channel of its own,
// shared by its waiters on every lock that publishes there (every lock of
// the Client on one server; on a Redis Cluster, every lock in one slot): a
// release that hands a lock to one of them publishes there, so a grant
// wakes one client, not every client waiting on the lock. Its waiters wait
// on its board, which is ready once the server confirmed the
// subscription.
//
// A release hands the lock to a waiter only when the master counts a
// subscriber on the channel (PUBSUB NUMSUB). go-redis subscribes a
// sharded channel on the master its slot map names, which just after a
// failover may be the old master, now a replica that serves SSUBSCRIBE
// but is not counted: a checker, beside the receive loop, probes each
// sharded subscription from the master and moves one the master does not
// count.
type subscriber struct {
	r       Redis
	channel string
	sharded bool // SSUBSCRIBE (Redis Cluster), else SUBSCRIBE
	board   *grants.Board
	ctx     context.Context // ends at close: bounds the loops' pauses and probes
	stop    context.CancelFunc
	check   chan struct{} // a sharded subscription to probe (buffered: one pending)

	mu      sync.Mutex
	ps      *redis.PubSub // made at the first watch; replaced when a shard moves
	loop    chan struct{} // closed when the receive loop is over
	checked chan struct{} // closed when the checker is over
}

func newSubscriber(r Redis, channel string, sharded bool) *subscriber {
	ctx, stop := context.WithCancel(context.Background())
	return &subscriber{r: r, channel: channel, sharded: sharded, board: grants.NewBoard(),
		ctx: ctx, stop: stop, check: make(chan struct{}, 1)}
}

// watch registers waiter id, subscribing to the grant channel first if
// needed.
func (s *subscriber) watch(id string) *grants.Watcher {
	s.mu.Lock()
	subscribe := s.ps == nil && !s.board.Closed()
	var ps *redis.PubSub
	if subscribe {
		ps = s.newPubSub()
		s.ps, s.loop, s.checked = ps, make(chan struct{}), make(chan struct{})
		go s.receive()
		if s.sharded {
			go s.checker()
		} else {
			close(s.checked)
		}
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

// current is the subscription in use.
func (s *subscriber) current() *redis.PubSub {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ps
}

// receive delivers what the subscription brings until it is closed. A
// sharded subscription whose slot moved to another shard (the server
// unsubscribes it, or refuses it with a redirection) is opened again, on
// the slot's new master; each confirmed sharded subscription is handed to
// the checker.
func (s *subscriber) receive() {
	defer close(s.loop)
	var backoff ttl.Backoff
	for {
		ps := s.current() // the checker may have replaced it
		msg, err := ps.Receive(context.Background())
		if err != nil {
			// go-redis reconnects and resubscribes at the next Receive; a
			// subscription the checker replaced is closed.
			if !s.pause(backoff.Next()) {
				return
			}
			var re redis.Error
			if s.sharded && errors.As(err, &re) {
				s.reopen(ps)
			}
			continue
		}
		backoff.Reset()
		switch m := msg.(type) {
		case *redis.Subscription:
			switch m.Kind {
			case "subscribe":
				s.board.Confirm()
			case "ssubscribe":
				s.board.Confirm()
				select {
				case s.check <- struct{}{}:
				default: // one is pending
				}
			case "sunsubscribe": // the slot moved: the server let us go
				s.reopen(ps)
			}
		case *redis.Message:
			s.board.Deliver(m.Payload) // the checker's empty message is dropped
		}
	}
}

// checker probes each confirmed sharded subscription until it knows
// whether the master of the slot counts it, and moves one it does not
// count (with a backoff, once go-redis has been asked to reload its slot
// map): on a replica, it would never be handed a lock. A probe that fails
// is tried again after the backoff; one refused for good (a hand-written
// ACL without EVAL or SPUBLISH) leaves the subscription where it is.
// During a slot's migration the probe may run on the importing node,
// which counts nobody: the subscription then moves between the two until
// the migration ends, and the waiters' timers cover the gaps.
func (s *subscriber) checker() {
	defer close(s.checked)
	var backoff ttl.Backoff
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.check:
		}
		for {
			ps := s.current()
			n, err := s.probe()
			switch {
			case s.ctx.Err() != nil:
				return
			case err == nil && n > 0: // on the master
				backoff.Reset()
			case err != nil && errors.Is(redisguard.Permanent(err), ttl.ErrPermanent):
			case err == nil: // counted nowhere: on a replica
				if cc, ok := s.r.(*redis.ClusterClient); ok {
					cc.ReloadState(s.ctx)
				}
				if !s.pause(backoff.Next()) {
					return
				}
				s.reopen(ps) // its confirmation asks for another probe
			default: // unknown: ask again
				if !s.pause(backoff.Next()) {
					return
				}
				continue
			}
			break
		}
	}
}

// probe publishes an empty message on the channel from the master of its
// slot (in a script, which runs on masters only) and returns how many
// subscribers got it there.
func (s *subscriber) probe() (int64, error) {
	ctx, cancel := context.WithTimeout(s.ctx, probeTimeout)
	defer cancel()
	return probeScript.Run(ctx, s.r, []string{s.channel}).Int64()
}

// probeTimeout bounds a probe.
const probeTimeout = 2 * time.Second

// pause waits d, or until the subscriber is closed: false then.
func (s *subscriber) pause(d time.Duration) bool {
	return ttl.Sleep(s.ctx, d) && !s.board.Closed()
}

// reopen replaces the sharded subscription old with a new one, unless it
// was replaced already or the subscriber is closed. Grants published
// meanwhile are missed: the waiters' timers cover them.
func (s *subscriber) reopen(old *redis.PubSub) {
	s.mu.Lock()
	if s.board.Closed() || s.ps != old {
		s.mu.Unlock()
		return
	}
	ps := s.newPubSub()
	s.ps = ps
	s.mu.Unlock()
	_ = old.Close()
	s.subscribe(ps)
}

// close ends the subscription and waits for the receive loop and the
// checker.
func (s *subscriber) close() error {
	s.mu.Lock()
	if !s.board.Close() {
		s.mu.Unlock()
		return nil
	}
	s.stop()
	ps, loop, checked := s.ps, s.loop, s.checked
	s.mu.Unlock()
	if ps == nil {
		return nil
	}
	err := ps.Close()
	<-loop
	<-checked
	return err
}
