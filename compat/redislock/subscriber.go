package redislock

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/zkrecipes/zkrecipes/compat/internal/grants"
)

// subscriber is a Client's one subscription, to a grant channel of its own
// shared by all its waiters on every lock: a release that hands a lock to
// one of them publishes there, so a grant wakes one client, not every
// client waiting on the lock. Its waiters wait on its board, which is
// ready once the server confirmed the subscription.
type subscriber struct {
	r       Redis
	channel string
	board   *grants.Board

	mu   sync.Mutex
	ps   *redis.PubSub // made at the first watch
	loop chan struct{} // closed when the receive loop is over
}

func newSubscriber(r Redis) *subscriber {
	return &subscriber{
		r:       r,
		channel: "zkrecipes:redislock:grants:" + uuid.NewString(),
		board:   grants.NewBoard(),
	}
}

// watch registers waiter id, subscribing to the grant channel first if
// needed.
func (s *subscriber) watch(id string) *grants.Watcher {
	s.mu.Lock()
	subscribe := s.ps == nil && !s.board.Closed()
	if subscribe {
		s.ps = s.r.Subscribe(context.Background())
		s.loop = make(chan struct{})
		go s.receive(s.ps)
	}
	w := s.board.Watch(id)
	ps := s.ps
	s.mu.Unlock()
	if subscribe {
		// An error here is retried by go-redis when it reconnects; until
		// the server confirms, waiters rely on their timers.
		_ = ps.Subscribe(context.Background(), s.channel)
	}
	return w
}

// receive delivers what the subscription brings until it is closed.
func (s *subscriber) receive(ps *redis.PubSub) {
	defer close(s.loop)
	backoff := retryBase
	for {
		msg, err := ps.Receive(context.Background())
		if err != nil {
			if s.board.Closed() {
				return
			}
			time.Sleep(backoff) // go-redis reconnects and resubscribes at the next Receive
			backoff = min(2*backoff, retryCap)
			continue
		}
		backoff = retryBase
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				s.board.Confirm()
			}
		case *redis.Message:
			id := s.board.Deliver(m.Payload)
			if hook := testHooks.delivered.Load(); hook != nil {
				(*hook)(s, id)
			}
		}
	}
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
