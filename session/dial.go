package session

import (
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
)

// startDialLocked starts a new connection generation: a goroutine dials
// (outside the lock: resolving the servers' names may take seconds, and
// fails while DNS is down, so it is retried with backoff until the client
// is closed) and makes the connection current once its credentials are
// registered.
func (c *Client) startDialLocked() {
	c.connGen++
	gen := c.connGen
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.dial(gen)
	}()
}

func (c *Client) dial(gen uint64) {
	wait := DefaultRetryBase
	var conn *zk.Conn
	for {
		var err error
		if conn, err = c.newConn(gen); err == nil {
			break
		}
		c.log.Error("zookeeper connect failed, retrying", "err", err, "in", wait)
		select {
		case <-c.done:
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, DefaultRetryCap)
	}
	c.mu.Lock()
	if gen != c.connGen || c.closed {
		c.mu.Unlock()
		conn.Close()
		return
	}
	c.pending = conn
	c.mu.Unlock()
	c.authenticate(conn)
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen == c.connGen && !c.closed {
		c.setConnLocked(gen, conn)
	}
}

// newConn starts a zk.Conn (it connects in the background) whose session
// events feed the state machine while gen is current, and whose node
// events feed Notifications and the watch table.
func (c *Client) newConn(gen uint64) (*zk.Conn, error) {
	ready := make(chan struct{})
	var conn *zk.Conn
	cb := func(ev zk.Event) {
		<-ready // conn is set
		if ev.Type != zk.EventSession {
			c.notify(ev)
			c.fire(conn, ev)
			return
		}
		c.onSessionEvent(gen, conn, ev.State)
	}
	next := new(nextTarget) // the host provider's pick, for the dialer
	conn, _, err := zk.Connect(c.servers, c.cfg.sessionTimeout,
		zk.WithEventCallback(cb),
		zk.WithDialer(c.live.dialerOfConn(next)),
		zk.WithHostProvider(newHostProvider(&c.live, next)),
		zk.WithLogger(zkLogger{c.log}))
	close(ready)
	if err != nil {
		return nil, fmt.Errorf("session: connect: %w", err)
	}
	return conn, nil
}

// authenticate registers the digest credentials on a new connection before
// any operation may use it; go-zookeeper re-sends them on reconnects.
func (c *Client) authenticate(conn *zk.Conn) {
	for _, cred := range c.cfg.auth {
		for {
			err := conn.AddAuth("digest", cred)
			if err == nil {
				break
			}
			if !IsRetryable(err) {
				c.log.Error("zookeeper digest authentication failed", "err", err)
				break
			}
			select {
			case <-c.done:
				return
			case <-time.After(DefaultRetryBase):
			}
		}
	}
}

func (c *Client) setConnLocked(gen uint64, conn *zk.Conn) {
	c.conn = conn
	close(c.connReady)
}

// replaceConnLocked abandons the current connection (and so its session:
// Curator's simulated expiry) and dials a new one.
func (c *Client) replaceConnLocked() {
	old := c.pending
	c.conn, c.pending = nil, nil
	c.connReady = make(chan struct{})
	if old != nil {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			old.Close()
		}()
	}
	c.startDialLocked()
}
