package memcachedlock

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
)

// A token is the start time of the server process that granted the lock,
// in seconds since the epoch, times epochScale, plus the lock item's CAS
// value. The CAS counter orders the holders of one server process; the
// start time orders the processes, since a cold restart counts CAS values
// from 1 again (see "Tokens" in the package doc for what is assumed).
// The marker carries the start time (its value), so that each acquisition
// reads it with the lock item, from the same process, in the same request.
const (
	// epochScale is how many CAS values a second of the server's life
	// makes room for: a process that ran s seconds (at least 2 s before
	// it can grant a lock: the quiet period) is followed by one that
	// started s seconds later, whose tokens start s*epochScale higher.
	epochScale = 1_000_000_000
	// maxEpoch is the latest start time a token can hold: 2262-04-11.
	maxEpoch = math.MaxInt64/epochScale - 1
	// undated is the marker's value when it gives no start time: written
	// by a Lock without the server's address, or by earlier versions of
	// this package. A Lock with the address dates it.
	undated = "1"
	// datedPrefix starts the value of a marker that gives its server's
	// start time: "e1795845957".
	datedPrefix = "e"
)

// markerValue is the value of a marker of the server started at start.
func markerValue(start int64) []byte {
	return []byte(datedPrefix + strconv.FormatInt(start, 10))
}

// markerStart is the start time a marker's value gives; 0 when it gives
// none.
func markerStart(value []byte) int64 {
	s, ok := strings.CutPrefix(string(value), datedPrefix)
	if !ok {
		return 0
	}
	start, err := strconv.ParseInt(s, 10, 64)
	if err != nil || start <= 0 {
		return 0
	}
	return start
}

// fence is the token of the lock item whose CAS value is cas, on the
// server started at start.
func fence(start int64, cas uint64) (int64, error) {
	if start <= 0 || start > maxEpoch || cas > uint64(math.MaxInt64-start*epochScale) {
		return 0, ttl.Permanent(fmt.Errorf("memcached's clock says it started at %d s after 1970, and its CAS value is %d: "+
			"a token (start × %d + CAS) must fit in an int64 (start times from 1970 to 2262)", start, cas, epochScale))
	}
	return start*epochScale + int64(cas), nil
}

// serverStart reads, from the server's "stats" (over a connection of its
// own, bounded by checkTimeout), when the server process started by its
// clock (time less uptime: fixed for the life of the process, and kept
// by a warm restart), in seconds since the epoch, and how long it has run.
func (l *Lock) serverStart() (start int64, uptime time.Duration, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
	defer cancel()
	conn, err := l.c.dial(ctx, network(l.c.addr), l.c.addr)
	if err != nil {
		return 0, 0, fmt.Errorf("read the start time of memcached at %s: %w", l.c.addr, permanent(err))
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	stats, err := readStats(conn, "stats", "time", "uptime")
	var refusal refused
	if errors.As(err, &refusal) {
		return 0, 0, ttl.Permanent(fmt.Errorf("read the start time of memcached at %s: stats: %w: the tokens need it (a Lock without WithServerAddr works without tokens)",
			l.c.addr, err))
	}
	if err != nil {
		return 0, 0, fmt.Errorf("read the start time of memcached at %s (stats): %w", l.c.addr, permanent(err))
	}
	now, err1 := strconv.ParseInt(stats["time"], 10, 64)
	up, err2 := strconv.ParseInt(stats["uptime"], 10, 64)
	if err := errors.Join(err1, err2); err != nil || up < 0 {
		return 0, 0, ttl.Permanent(fmt.Errorf("read the start time of memcached at %s: stats gives time %q and uptime %q: the tokens need both",
			l.c.addr, stats["time"], stats["uptime"]))
	}
	return now - up, time.Duration(up) * time.Second, nil
}

// dateMarker gives the marker read (one that gives no start time) the
// server's start time, by compare-and-swap: only that marker, on the
// server process that holds it (a cold restart since would have lost it,
// and the swap fails), is dated. When the marker changed meanwhile (dated
// by another client), it is read again.
func (l *Lock) dateMarker(marker *memcache.Item) (int64, error) {
	start, _, err := l.serverStart()
	if err != nil {
		return 0, err
	}
	err = l.c.mc.CompareAndSwap(&memcache.Item{Key: l.aliveKey, Value: markerValue(start), CasID: marker.CasID})
	switch {
	case err == nil:
		return start, nil
	case errors.Is(err, memcache.ErrCASConflict) || missing(err):
		return l.readStart()
	}
	return 0, fmt.Errorf("date the marker: %w", permanent(err))
}

// errUndated: the server's start time could not be had from the
// marker, or written into it (it changed meanwhile); the attempt is
// tried again.
var errUndated = errors.New("the server's start time is not in the lock's marker yet")

// readStart reads the marker again, for the start time another client
// wrote in it.
func (l *Lock) readStart() (int64, error) {
	it, err := l.c.mc.Get(l.aliveKey)
	switch {
	case missing(err):
		return 0, fmt.Errorf("%w (the marker is gone: the server restarted or was flushed)", errUndated)
	case err != nil:
		return 0, fmt.Errorf("read the marker: %w", permanent(err))
	}
	if start := markerStart(it.Value); start != 0 {
		return start, nil
	}
	return 0, fmt.Errorf("%w (another client wrote it without)", errUndated)
}
