package compatbench

import (
	"bytes"
	"context"
	"crypto/tls"
	"maps"
	"net"
	"sync"
	"time"
)

// Counter counts the top-level commands that clients send to Redis: every
// RESP array (and inline command) written client→server on the
// connections it dialed, by name. It parses the bytes on the wire, so it
// sees what any client library sends (go-redis, rueidis), pipelined or
// not, including connection handshakes (HELLO, CLIENT ...) and pub/sub
// (SUBSCRIBE); commands that scripts run inside Redis are not sent and not
// counted (INFO commandstats has those). It is installed through the
// client's own dialer rather than as a proxy, so that counting adds no hop
// and no latency: the bytes are parsed as they are written.
type Counter struct {
	mu     sync.Mutex
	total  int64
	byName map[string]int64
	broken int64 // bytes that were not RESP the parser understood
}

// NewCounter returns a Counter with nothing counted.
func NewCounter() *Counter { return &Counter{byName: map[string]int64{}} }

// Counts is what a Counter counted up to a moment.
type Counts struct {
	Total  int64
	ByName map[string]int64
	Broken int64
	// CPU is the servers' CPU time, in CommandStats' counts (0 in a
	// Counter's).
	CPU time.Duration
}

// Snapshot returns the counts so far.
func (c *Counter) Snapshot() Counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Counts{Total: c.total, ByName: maps.Clone(c.byName), Broken: c.broken}
}

// Sub is a − b: what was counted between two snapshots.
func (a Counts) Sub(b Counts) Counts {
	d := Counts{Total: a.Total - b.Total, ByName: map[string]int64{}, Broken: a.Broken - b.Broken, CPU: a.CPU - b.CPU}
	for k, v := range a.ByName {
		if n := v - b.ByName[k]; n != 0 {
			d.ByName[k] = n
		}
	}
	return d
}

// Add is a + b.
func (a Counts) Add(b Counts) Counts {
	d := Counts{Total: a.Total + b.Total, ByName: maps.Clone(a.ByName), Broken: a.Broken + b.Broken, CPU: a.CPU + b.CPU}
	if d.ByName == nil {
		d.ByName = map[string]int64{}
	}
	for k, v := range b.ByName {
		d.ByName[k] += v
	}
	return d
}

func (c *Counter) record(name string) {
	c.mu.Lock()
	c.total++
	c.byName[name]++
	c.mu.Unlock()
}

func (c *Counter) brokenBytes(n int) {
	c.mu.Lock()
	c.broken += int64(n)
	c.mu.Unlock()
}

// dialTimeout bounds a dial.
const dialTimeout = 5 * time.Second

// Dial dials addr with a connection whose writes c counts.
func (c *Counter) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return c.Wrap(conn), nil
}

// RueidisDial is Dial in the shape of rueidis.ClientOption.DialCtxFn.
func (c *Counter) RueidisDial(ctx context.Context, addr string, d *net.Dialer, _ *tls.Config) (net.Conn, error) {
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return c.Wrap(conn), nil
}

// Wrap returns conn with its writes counted by c.
func (c *Counter) Wrap(conn net.Conn) net.Conn { return &countingConn{Conn: conn, p: parser{c: c}} }

// countingConn is a connection whose writes are parsed as RESP commands.
type countingConn struct {
	net.Conn
	mu sync.Mutex // writes are parsed in order
	p  parser
}

func (cc *countingConn) Write(b []byte) (int, error) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	n, err := cc.Conn.Write(b)
	cc.p.feed(b[:n])
	return n, err
}

// NetConn is the connection underneath (go-redis peeks at it to check a
// pooled connection's health).
func (cc *countingConn) NetConn() net.Conn { return cc.Conn }

// parser is an incremental parser of the client→server half of RESP: a
// stream of arrays of bulk strings (or inline commands, one a line). It
// records every command's name (its first argument, upper case, with the
// second for commands that have subcommands, as CLIENT|SETINFO).
type parser struct {
	c     *Counter
	st    pstate
	num   int64 // the number being read
	neg   bool
	args  int64 // arguments left in the array
	argi  int   // index of the argument being read
	size  int64 // the bulk string's length
	left  int64 // bytes left in the bulk string, CRLF included
	name  []byte
	sub   []byte
	naked []byte // an inline command's line
}

type pstate uint8

const (
	stCommand  pstate = iota // before a command
	stArrayLen               // after '*'
	stArgStart               // expecting '$'
	stBulkLen                // after '$'
	stBulkData               // inside a bulk string
	stInline                 // inside an inline command
	stBroken                 // not RESP: the rest of this connection is not counted
)

// maxName bounds what is kept of a command's name and subcommand.
const maxName = 32

// subcommands are the commands whose name includes their second argument.
var subcommands = map[string]bool{"CLIENT": true, "CONFIG": true, "SCRIPT": true, "COMMAND": true, "FUNCTION": true}

func (p *parser) feed(b []byte) {
	for i := 0; i < len(b); {
		switch p.st {
		case stBroken:
			p.c.brokenBytes(len(b) - i)
			return
		case stCommand:
			switch ch := b[i]; ch {
			case '*':
				p.st, p.num, p.neg = stArrayLen, 0, false
			case '\r', '\n':
			default:
				p.st, p.naked = stInline, append(p.naked[:0], ch)
			}
			i++
		case stArrayLen, stBulkLen:
			ch := b[i]
			i++
			switch {
			case ch >= '0' && ch <= '9':
				p.num = p.num*10 + int64(ch-'0')
			case ch == '-':
				p.neg = true
			case ch == '\r':
			case ch == '\n':
				p.lengthRead()
			default:
				p.st = stBroken
			}
		case stArgStart:
			if b[i] != '$' {
				p.st = stBroken
				continue
			}
			p.st, p.num, p.neg = stBulkLen, 0, false
			i++
		case stBulkData:
			n := min(int64(len(b)-i), p.left)
			p.keep(b[i : i+int(n)])
			p.left -= n
			i += int(n)
			if p.left == 0 {
				p.argDone()
			}
		case stInline:
			j := bytes.IndexByte(b[i:], '\n')
			if j < 0 {
				if len(p.naked) < maxName {
					p.naked = append(p.naked, b[i:min(len(b), i+maxName)]...)
				}
				return
			}
			if len(p.naked) < maxName {
				p.naked = append(p.naked, b[i:min(i+j, i+maxName)]...)
			}
			i += j + 1
			p.st = stCommand
			if f := bytes.Fields(p.naked); len(f) > 0 {
				p.c.record(string(bytes.ToUpper(f[0])))
			}
		}
	}
}

// lengthRead ends the number after '*' or '$'.
func (p *parser) lengthRead() {
	n := p.num
	if p.neg {
		n = -n
	}
	if p.st == stArrayLen {
		if n <= 0 {
			p.st = stCommand // an empty or null array is no command
			return
		}
		p.args, p.argi, p.name, p.sub = n, 0, p.name[:0], p.sub[:0]
		p.st = stArgStart
		return
	}
	if n < 0 {
		p.st = stBroken // clients do not send null bulk strings
		return
	}
	p.size, p.left, p.st = n, n+2, stBulkData
}

// keep saves what is needed of the argument's bytes b (the part of it
// that is next in the stream).
func (p *parser) keep(b []byte) {
	dataLeft := max(p.left-2, 0) // data bytes left before the CRLF
	data := b[:min(int64(len(b)), dataLeft)]
	switch p.argi {
	case 0:
		if room := maxName - len(p.name); room > 0 {
			p.name = append(p.name, data[:min(len(data), room)]...)
		}
	case 1:
		if room := maxName - len(p.sub); room > 0 {
			p.sub = append(p.sub, data[:min(len(data), room)]...)
		}
	}
}

// argDone ends an argument, and the command with its last.
func (p *parser) argDone() {
	p.argi++
	p.args--
	if p.args > 0 {
		p.st = stArgStart
		return
	}
	p.st = stCommand
	name := string(bytes.ToUpper(p.name))
	if subcommands[name] && len(p.sub) > 0 {
		name += "|" + string(bytes.ToUpper(p.sub))
	}
	p.c.record(name)
}
