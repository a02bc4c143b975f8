package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// notAcquired reports why the wait ended without the lock and returns the
// exit status: 128+N for signal N; 75 for --timeout once connected (the
// lock was waited for); 69 for a backend that could not be reached or
// refused zklock, --timeout passing while connecting, while ZooKeeper
// is out of reach, or after an attempt the servers did not answer
// (recipes.ErrUnreachable), included: an outage must never read as "held
// by another" to a script.
func (r *runner) notAcquired(ctx context.Context, err error) int {
	var sig interrupted
	var to timedOut
	cause := context.Cause(ctx)
	switch {
	case errors.As(cause, &sig):
		r.rep.errorf("%v while %s", sig, r.waitingFor())
		return signalExit(sig.sig)
	case errors.As(cause, &to) && r.lock == nil:
		// Not connected yet: the servers could not be reached in time.
		r.rep.errorf("%v %s: %v", to, r.waitingFor(), err)
		return exitUnavailable
	case errors.As(cause, &to) && r.client != nil && !connected(r.client.State()):
		// ZooKeeper out of reach when the time was up: whether the lock
		// is held is not known, and the outage is the news.
		r.rep.errorf("%v %s: ZooKeeper at %s out of reach (%v)", to, r.waitingFor(), r.o.conn.servers, r.client.State())
		return exitUnavailable
	case errors.As(cause, &to) && errors.Is(err, recipes.ErrUnreachable):
		// The last attempt went unanswered (a Redis, memcached or SQL
		// server stopped during the wait): as with ZooKeeper, the outage
		// is the news, and err names the last attempt's error.
		r.rep.errorf("%v %s: %s did not answer: %v", to, r.waitingFor(), r.backendAddr(), err)
		return exitUnavailable
	case errors.As(cause, &to):
		r.rep.errorf("%v %s%s", to, r.waitingFor(), r.describeHolder())
		return exitTempFail
	default:
		if what, cause, ok := whatRefused(err); ok {
			server, hint := r.o.refusedBy(err, what)
			r.rep.errorf("%s", refusedMessage(server, what, cause, hint))
			return exitUnavailable
		}
		r.rep.errorf("%v", err)
		return exitUnavailable
	}
}

// connected reports whether a ZooKeeper client in state s can take a
// lock (a read-only server cannot: it refuses writes).
func connected(s session.State) bool {
	return s == session.Connected || s == session.Reconnected
}

// waitingFor is what an ended wait was doing, for messages: "waiting for
// LOCK", or "connecting to SERVERS" before the lock was made.
func (r *runner) waitingFor() string {
	if r.lock == nil {
		return "connecting to " + r.backendAddr()
	}
	return "waiting for " + r.lockName()
}

// describeHolder is " (held by DATA, session 0x...)" for messages, or "".
// Readers and writers are named so ("held by reader DATA, ..."), and there
// may be several readers: up to maxDescribed holders are shown. A reader
// can also be kept out by a writer waiting ahead while only readers hold:
// the first such waiter is named too ("...; waiting: writer DATA, ...").
// Nodes of our own session (a waiter's node not yet removed) are left out.
func (r *runner) describeHolder() string {
	if r.client == nil {
		return "" // not known on the other backends
	}
	entries, ours, err := r.listing(context.Background())
	if err != nil {
		return ""
	}
	var holders []string
	onlyReaders := true
	for _, e := range entries {
		if e.role != roleHolder || e.session == ours {
			continue
		}
		holders = append(holders, describeEntry(e))
		onlyReaders = onlyReaders && e.kind == kindRead.String()
	}
	if len(holders) == 0 {
		return ""
	}
	holders = atMost(holders)
	if r.o.kind == kindRead && onlyReaders {
		for _, e := range entries {
			if e.role != roleHolder && e.kind != kindRead.String() && e.session != ours {
				holders = append(holders, "waiting: "+describeEntry(e))
				break
			}
		}
	}
	return " (held by " + strings.Join(holders, "; ") + ")"
}

// maxDescribed is how many holders a message names.
const maxDescribed = 3

// atMost keeps the first maxDescribed holders, and says how many more.
func atMost(holders []string) []string {
	if n := len(holders); n > maxDescribed {
		return append(holders[:maxDescribed:maxDescribed], fmt.Sprintf("and %d more", n-maxDescribed))
	}
	return holders
}

// listing lists the ZooKeeper lock's nodes for a message (bounded by
// describeTimeout) with the id of zklock's own session, whose nodes are
// zklock's.
func (r *runner) listing(ctx context.Context) (entries []lockEntry, ours int64, err error) {
	ctx, cancel := context.WithTimeout(ctx, describeTimeout)
	defer cancel()
	if s := r.client.CurrentSession(); s != nil {
		ours = s.ID()
	}
	entries, err = listLock(ctx, r.client, r.o.path)
	return entries, ours, err
}

// describeEntry is "DATA, session 0x...", with "reader " or "writer " first
// for the nodes of a read/write lock.
func describeEntry(e lockEntry) string {
	who := ""
	switch e.kind {
	case kindRead.String():
		who = "reader "
	case kindWrite.String():
		who = "writer "
	}
	return fmt.Sprintf("%s%s, session 0x%x", who, displayData(e.data), e.session)
}

// backendAddr names the servers zklock connects to, for messages.
func (r *runner) backendAddr() string {
	switch r.o.backend.name {
	case backendRedis, backendRedlock, backendCluster:
		return "Redis at " + strings.Join(r.o.backend.redisServers.addrs(), ",")
	case backendSentinel:
		return fmt.Sprintf("Redis master %q through the sentinels at %s", r.o.backend.master,
			strings.Join(r.o.backend.sentinelServers.addrs(), ","))
	case backendMemcached:
		return "memcached at " + r.o.backend.memcached
	case backendPostgres, backendMySQL:
		return r.o.backend.sqlServer()
	}
	return "ZooKeeper at " + r.o.conn.servers
}
