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
	if err := checkCtx(ctx); err != nil {
		return nil, err
	}
	s := &subscriber{wake: make(chan struct{}, 1), out: make(chan StateChange)}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	c.subs = append(c.subs, s)
	c.mu.Unlock()
	go func() {
		s.run(ctx)
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, x := range c.subs {
			if x == s {
				c.subs = append(c.subs[:i], c.subs[i+1:]...)
				break
			}
		}
	}()
	return s.out, nil
}

// subscriber is an unbounded FIFO between the client and one reader.
type subscriber struct {
	mu       sync.Mutex
	queue    []StateChange
	finished bool
	wake     chan struct{}
	out      chan StateChange
}

func (s *subscriber) push(ch StateChange) {
	s.mu.Lock()
	s.queue = append(s.queue, ch)
	s.mu.Unlock()
	s.signal()
}

// finish lets run close the channel once the queue is delivered.
func (s *subscriber) finish() {
	s.mu.Lock()
	s.finished = true
	s.mu.Unlock()
	s.signal()
}

func (s *subscriber) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *subscriber) run(ctx context.Context) {
	defer close(s.out)
	for {
		s.mu.Lock()
		batch, finished := s.queue, s.finished
		s.queue = nil
		s.mu.Unlock()
		for _, ch := range batch {
			select {
			case s.out <- ch:
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
