package session

import (
	"fmt"
	"math"
	"time"

	"github.com/go-zookeeper/zk"
)

// Limits of the protocol and of the server.
const (
	// DefaultMaxRequestSize is the largest request the client sends, counted
	// as the server counts it (a frame, without its 4-byte length): the
	// default of ZooKeeper's jute.maxbuffer, 0xfffff bytes. The server drops
	// the connection of a client that sends more, which suspends the client
	// and ends every lease it holds; so a write that would exceed it is
	// refused before it is sent, with an error that is ErrRequestTooLarge.
	// Node data can be a little under 1 MiB: the path and the ACL count too.
	DefaultMaxRequestSize = 0xfffff
	// MaxSessionTimeout is the longest session timeout the protocol can
	// carry (milliseconds in a signed 32-bit integer). The server clamps
	// what it is asked to its own minSessionTimeout..maxSessionTimeout
	// (by default 2 to 20 ticks: 4s to 40s with tickTime=2000).
	MaxSessionTimeout = math.MaxInt32 * time.Millisecond
)

// WithMaxRequestSize sets the largest request the client sends (default
// DefaultMaxRequestSize); set it to the servers' jute.maxbuffer when they
// use another value. Writes over it fail with ErrRequestTooLarge and send
// nothing.
func WithMaxRequestSize(bytes int) Option {
	return func(c *config) error {
		if bytes < minRequestLimit {
			return invalid("max request size %d: must be at least %d bytes", bytes, minRequestLimit)
		}
		c.maxRequest = bytes
		return nil
	}
}

// minRequestLimit keeps WithMaxRequestSize above what the lock recipes need
// for their own requests (paths, ACLs, a few guards).
const minRequestLimit = 4096

// Sizes of requests on the wire (jute), without the frame length.
const (
	requestHeaderSize = 4 + 4     // xid, opcode
	multiHeaderSize   = 4 + 1 + 4 // op type, done, err; also the end marker
)

func bufferSize(b []byte) int { return 4 + len(b) }
func stringSize(s string) int { return 4 + len(s) }
func aclSize(acl []zk.ACL) int {
	n := 4
	for _, a := range acl {
		n += 4 + stringSize(a.Scheme) + stringSize(a.ID)
	}
	return n
}

// createBodySize is the size of a create's body (path, data, ACL, flags).
func createBodySize(path string, data []byte, acl []zk.ACL) int {
	return stringSize(path) + bufferSize(data) + aclSize(acl) + 4
}

// checkSize refuses a request of size bytes (server paths) over the limit.
func (c *Client) checkSize(op, path string, size int) error {
	if size <= c.cfg.maxRequest {
		return nil
	}
	return fmt.Errorf("%w: %s %s: %d bytes, over the server's limit of %d (jute.maxbuffer; see WithMaxRequestSize)",
		ErrRequestTooLarge, op, path, size, c.cfg.maxRequest)
}

// multiSize is the size of a multi of reqs (go-zookeeper request structs).
func multiSize(reqs []any) int {
	n := requestHeaderSize + multiHeaderSize
	for _, r := range reqs {
		n += multiHeaderSize
		switch r := r.(type) {
		case *zk.CreateRequest:
			n += createBodySize(r.Path, r.Data, r.Acl)
		case *zk.SetDataRequest:
			n += stringSize(r.Path) + bufferSize(r.Data) + 4
		case *zk.DeleteRequest:
			n += stringSize(r.Path) + 4
		case *zk.CheckVersionRequest:
			n += stringSize(r.Path) + 4
		}
	}
	return n
}
