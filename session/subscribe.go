package session

import (
	"context"
	"sync"
)

// Subscribe returns a channel that receives every StateChange from now on,
// in order and none dropped: changes queue without bound until read. The
// channel closes after ctx ends, or after Closed has been delivered once
// the client is closed. Read it until it closes, or cancel ctx.
func (c *Client) Subscribe(ctx context.Context) (<-chan StateChange, error) {
	return c.states.add(ctx)
}

// fanout hands one kind of news (state changes, node notifications) to
// every subscriber, in order. Its lock is its own: news is pushed from
// go-zookeeper's receive loop too, which must never wait on the client.
type fanout[T any] struct {
	mu     sync.Mutex
	subs   []*subscriber[T]
	closed bool
}

// add subscribes from now on; ErrClosed once the client is closed.
func (f *fanout[T]) add(ctx context.Context) (<-chan T, error) {
	if err := checkCtx(ctx); err != nil {
		return nil, err
	}
	s := &subscriber[T]{wake: make(chan struct{}, 1), out: make(chan T)}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil, ErrClosed
	}
	f.subs = append(f.subs, s)
	f.mu.Unlock()
	go func() {
		s.run(ctx)
		f.mu.Lock()
		defer f.mu.Unlock()
		for i, x := range f.subs {
			if x == s {
				f.subs = append(f.subs[:i], f.subs[i+1:]...)
				break
			}
		}
	}()
	return s.out, nil
}

// push queues v for every subscriber; it never blocks.
func (f *fanout[T]) push(v T) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.subs {
		s.push(v)
	}
}

// close ends every subscription once what is queued is delivered, and
// refuses new ones.
func (f *fanout[T]) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	for _, s := range f.subs {
		s.finish()
	}
	f.subs = nil
}

// subscriber is an unbounded FIFO between the client and one reader.
type subscriber[T any] struct {
	mu       sync.Mutex
	queue    []T
	finished bool
	wake     chan struct{}
	out      chan T
}

func (s *subscriber[T]) push(v T) {
	s.mu.Lock()
	s.queue = append(s.queue, v)
	s.mu.Unlock()
	s.signal()
}

// finish lets run close the channel once the queue is delivered.
func (s *subscriber[T]) finish() {
	s.mu.Lock()
	s.finished = true
	s.mu.Unlock()
	s.signal()
}

func (s *subscriber[T]) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *subscriber[T]) run(ctx context.Context) {
	defer close(s.out)
	for {
		s.mu.Lock()
		batch, finished := s.queue, s.finished
		s.queue = nil
		s.mu.Unlock()
		for i, v := range batch {
			select {
			case s.out <- v:
				var zero T
				batch[i] = zero // let the delivered value go
			case <-ctx.Done():
				return
			}
		}
		if len(batch) == 0 && finished {
			return
		}
		if len(batch) > 0 {
			continue
		}
		select {
		case <-s.wake:
		case <-ctx.Done():
			return
		}
	}
}
