package redislock

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// idleUnsubscribe is how long a lock's grant channel stays subscribed with
// no waiter, so that a client waiting on a lock again and again subscribes
// once.
const idleUnsubscribe = time.Minute

// subscriber is a Client's one subscription, shared by all its waiters:
// grants of the locks they wait for are delivered to the waiter named in
// the message.
type subscriber struct {
	r Redis

	mu     sync.Mutex
	ps     *redis.PubSub // made at the first watch
	chans  map[string]*grants
	closed bool
	loop   chan struct{} // closed when the receive loop is over
}

// grants is one subscribed channel.
type grants struct {
	ready     chan struct{} // closed when the server confirmed the subscription
	confirmed bool
	waiters   map[string]chan struct{} // by waiter id
	idle      *time.Timer              // unsubscribes when no waiter is left
}

func newSubscriber(r Redis) *subscriber {
	return &subscriber{r: r, chans: map[string]*grants{}}
}

// watcher is one waiter's registration on a channel.
type watcher struct {
	s         *subscriber
	channel   string
	id        string
	wake      chan struct{} // a grant to id arrived
	ready     <-chan struct{}
	confirmed bool // the subscription already held when the watch began
}

// watch registers waiter id on channel, subscribing to it if needed.
func (s *subscriber) watch(channel, id string) *watcher {
	w := &watcher{s: s, channel: channel, id: id, wake: make(chan struct{}, 1)}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ready := make(chan struct{})
		close(ready)
		w.ready, w.confirmed = ready, true // no grants come: the timer alone
		return w
	}
	if s.ps == nil {
		s.ps = s.r.Subscribe(context.Background())
		s.loop = make(chan struct{})
		go s.receive(s.ps)
	}
	g := s.chans[channel]
	subscribe := g == nil
	if subscribe {
		g = &grants{ready: make(chan struct{}), waiters: map[string]chan struct{}{}}
		s.chans[channel] = g
	}
	if g.idle != nil {
		g.idle.Stop() // kept, to be reset when idle again
	}
	g.waiters[id] = w.wake
	w.ready, w.confirmed = g.ready, g.confirmed
	ps := s.ps
	s.mu.Unlock()
	if subscribe {
		// An error here is retried by go-redis when it reconnects; until
		// the server confirms, waiters rely on their timers.
		_ = ps.Subscribe(context.Background(), channel)
	}
	return w
}

// stop ends the watch; the channel is unsubscribed once idle.
func (w *watcher) stop() {
	s := w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.chans[w.channel]
	if g == nil {
		return
	}
	delete(g.waiters, w.id)
	if len(g.waiters) > 0 || s.closed {
		return
	}
	if g.idle != nil {
		g.idle.Reset(idleUnsubscribe)
		return
	}
	g.idle = time.AfterFunc(idleUnsubscribe, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.chans[w.channel] != g || len(g.waiters) > 0 || s.closed {
			return
		}
		delete(s.chans, w.channel)
		_ = s.ps.Unsubscribe(context.Background(), w.channel)
	})
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
				s.confirm(m.Channel)
			}
		case *redis.Message:
			s.deliver(m.Channel, m.Payload)
		}
	}
}

func (s *subscriber) confirm(channel string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g := s.chans[channel]; g != nil && !g.confirmed {
		g.confirmed = true
		close(g.ready)
	}
}

// deliver wakes the waiter a grant names, if it is ours.
func (s *subscriber) deliver(channel, id string) {
	if hook := testHooks.delivered.Load(); hook != nil {
		defer (*hook)(s, id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if g := s.chans[channel]; g != nil {
		if wake := g.waiters[id]; wake != nil {
			select {
			case wake <- struct{}{}:
			default:
			}
		}
	}
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
	for _, g := range s.chans {
		if g.idle != nil {
			g.idle.Stop()
		}
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
