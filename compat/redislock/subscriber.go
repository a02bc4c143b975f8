package redislock

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// subscriber is a Client's one subscription, to a grant channel of its own
// shared by all its waiters on every lock: a release that hands a lock to
// one of them publishes there, so a grant wakes one client, not every
// client waiting on the lock.
type subscriber struct {
	r       Redis
	channel string

	mu        sync.Mutex
	ps        *redis.PubSub // made at the first watch
	ready     chan struct{} // closed when the server confirmed the subscription
	confirmed bool
	waiters   map[string]chan grant // by waiter id
	closed    bool
	loop      chan struct{} // closed when the receive loop is over
}

// grant is what a release that handed the lock to a waiter tells it.
type grant struct {
	token int64
	stamp int64 // the waiter's, of its last attempt before the grant
}

func newSubscriber(r Redis) *subscriber {
	return &subscriber{
		r:       r,
		channel: "zkrecipes:redislock:grants:" + uuid.NewString(),
		ready:   make(chan struct{}),
		waiters: map[string]chan grant{},
	}
}

// watcher is one waiter's registration.
type watcher struct {
	s         *subscriber
	id        string
	grants    chan grant // buffered: a grant to id arrived
	ready     <-chan struct{}
	confirmed bool // the subscription already held when the watch began
}

// watch registers waiter id, subscribing to the grant channel first if
// needed.
func (s *subscriber) watch(id string) *watcher {
	w := &watcher{s: s, id: id, grants: make(chan grant, 1)}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ready := make(chan struct{})
		close(ready)
		w.ready, w.confirmed = ready, true // no grants come: the timer alone
		return w
	}
	subscribe := s.ps == nil
	if subscribe {
		s.ps = s.r.Subscribe(context.Background())
		s.loop = make(chan struct{})
		go s.receive(s.ps)
	}
	s.waiters[id] = w.grants
	w.ready, w.confirmed = s.ready, s.confirmed
	ps := s.ps
	s.mu.Unlock()
	if subscribe {
		// An error here is retried by go-redis when it reconnects; until
		// the server confirms, waiters rely on their timers.
		_ = ps.Subscribe(context.Background(), s.channel)
	}
	return w
}

// stop ends the watch.
func (w *watcher) stop() {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	delete(w.s.waiters, w.id)
}

// receive delivers what the subscription brings until it is closed.
func (s *subscriber) receive(ps *redis.PubSub) {
	defer close(s.loop)
	backoff := retryBase
	for {
		msg, err := ps.Receive(context.Background())
		if err != nil {
			if s.isClosed() {
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
				s.confirm()
			}
		case *redis.Message:
			s.deliver(m.Payload)
		}
	}
}

func (s *subscriber) confirm() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.confirmed {
		s.confirmed = true
		close(s.ready)
	}
}

// deliver hands a grant ("id token stamp", as the scripts publish it) to
// the waiter it names, if it still waits; anything else is dropped.
func (s *subscriber) deliver(payload string) {
	id, g, ok := parseGrant(payload)
	if hook := testHooks.delivered.Load(); hook != nil {
		defer (*hook)(s, id)
	}
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch := s.waiters[id]; ch != nil {
		select {
		case ch <- g:
		default:
		}
	}
}

// parseGrant reads a grant message: "id token stamp".
func parseGrant(payload string) (id string, g grant, ok bool) {
	id, rest, ok1 := strings.Cut(payload, " ")
	token, stamp, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 {
		return "", grant{}, false
	}
	var err1, err2 error
	g.token, err1 = strconv.ParseInt(token, 10, 64)
	g.stamp, err2 = strconv.ParseInt(stamp, 10, 64)
	return id, g, err1 == nil && err2 == nil
}

func (s *subscriber) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// close ends the subscription and waits for the receive loop.
func (s *subscriber) close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	ps, loop := s.ps, s.loop
	s.mu.Unlock()
	if ps == nil {
		return nil
	}
	err := ps.Close()
	<-loop
	return err
}
