package engine

import (
	"strings"
	"sync"

	"github.com/zkrecipes/zkrecipes/session"
)

// errConnLoss is the error of a request whose reply was lost: retryable
// (session.IsRetryable), so the engine cannot know whether the server
// applied it.
var errConnLoss = session.ErrConnectionClosed

// fakeFault is what a fakeConn does to one request instead of just serving
// it. The zero fakeFault serves it.
type fakeFault struct {
	// Block holds the request until it is closed (or the request's context
	// ends, which fails it unapplied); then Before and After apply.
	Block <-chan struct{}
	// Before fails the request without applying it: the request was lost.
	Before error
	// After applies the request, then fails it: the reply was lost.
	After error
	// Applied runs once the request is applied, before its reply (or
	// After's error) reaches the client: what happens between the two, as
	// the connection dropping (fakeConn.Disconnect) with the reply on it.
	Applied func()
}

func (f fakeFault) zero() bool {
	return f.Block == nil && f.Before == nil && f.After == nil && f.Applied == nil
}

// fakeInterceptor picks the fault of one request. op is a fakeOp* name;
// path is the request's path (for a create, the path asked for: before the
// sequence; for a Multi, its first op's). It runs on the requesting
// goroutine before the request reaches the server, with no lock held, so it
// may act on the server or on connections (to race the request), and it
// must be safe for concurrent use.
type fakeInterceptor func(op, path string) fakeFault

// Intercept adds an interceptor; the first that returns a fault wins.
func (c *fakeConn) Intercept(i fakeInterceptor) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.faults = append(c.faults, i)
}

// faultWhen calls fn for the requests of op whose path starts with prefix,
// with n counting them from 1.
func faultWhen(op, prefix string, fn func(n int, path string) fakeFault) fakeInterceptor {
	var mu sync.Mutex
	count := 0
	return func(o, p string) fakeFault {
		if o != op || !strings.HasPrefix(p, prefix) {
			return fakeFault{}
		}
		mu.Lock()
		count++
		n := count
		mu.Unlock()
		return fn(n, p)
	}
}

// faultFirst applies f to the first n requests of op under prefix (all of
// them when n < 0): "fail n times, then succeed".
func faultFirst(op, prefix string, n int, f fakeFault) fakeInterceptor {
	return faultWhen(op, prefix, func(k int, _ string) fakeFault {
		if n >= 0 && k > n {
			return fakeFault{}
		}
		return f
	})
}

// The common faults.
var (
	lostRequest = fakeFault{Before: errConnLoss} // nothing done
	lostReply   = fakeFault{After: errConnLoss}  // done, but the client cannot know
)
