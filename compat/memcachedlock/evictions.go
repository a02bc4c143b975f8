package memcachedlock

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
)

// Bounds of the eviction check.
const (
	// checkTimeout bounds one read of the server's settings (also when
	// Acquire's context has no deadline).
	checkTimeout = 2 * time.Second
	// maxSettingsLines bounds the reply read.
	maxSettingsLines = 1000
)

// checkServer checks, until a check succeeds, that the server runs with
// evictions off (WithServerAddr). Its errors are permanent when the
// setting is on or cannot be had, transient when the server could not be
// reached.
func (l *Lock) checkServer(ctx context.Context) error {
	if l.addr == "" || l.checked.Load() {
		return nil
	}
	if err := checkEvictions(ctx, l.dial, l.addr); err != nil {
		return err
	}
	l.checked.Store(true)
	return nil
}

// dialFunc connects to a memcached, as memcache.Client.DialContext does.
type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// dialerOf is how mc connects: its DialContext when it is a
// *memcache.Client that has one (TLS, authentication), else a plain
// net.Dialer's.
func dialerOf(mc Memcached) dialFunc {
	if c, ok := mc.(*memcache.Client); ok && c.DialContext != nil {
		return c.DialContext
	}
	var d net.Dialer
	return d.DialContext
}

// network is addr's network, as gomemcache takes it: a path (with a "/")
// is a unix socket's.
func network(addr string) string {
	if strings.Contains(addr, "/") {
		return "unix"
	}
	return "tcp"
}

// checkEvictions reads "stats settings" from the memcached at addr, over a
// connection of its own made by dial, bounded by ctx and checkTimeout, and
// returns nil when its evictions are off.
func checkEvictions(ctx context.Context, dial dialFunc, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	conn, err := dial(ctx, network(addr), addr)
	if err != nil {
		return fmt.Errorf("read the eviction setting of memcached at %s: %w", addr, permanent(err))
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) }) // cancelled early
	defer stop()
	setting, err := readEvictions(conn)
	switch {
	case err != nil:
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return fmt.Errorf("read the eviction setting of memcached at %s (stats settings): %w", addr, permanent(err))
	case setting == "off":
		return nil
	case setting == "on":
		return ttl.Permanent(fmt.Errorf("%w (%s; stats settings: evictions on): start it with -M (--disable-evictions), so that a full memcached refuses new items instead of evicting a held lock's item and letting another client in, or pass WithoutEvictionCheck() to accept that risk",
			ErrEvictions, addr))
	}
	return ttl.Permanent(fmt.Errorf("memcached at %s does not say whether it evicts (stats settings: %s): run it with -M (--disable-evictions) and pass WithoutEvictionCheck()", addr, setting))
}

// readEvictions sends "stats settings" and returns the value of its
// evictions line ("on" or "off"), or what the server said instead.
func readEvictions(conn net.Conn) (string, error) {
	return readStat(conn, "stats settings", "evictions")
}

// serverUptime reads the uptime of the memcached at addr ("stats"), over a
// connection of its own made by dial, bounded by checkTimeout.
func serverUptime(dial dialFunc, addr string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
	defer cancel()
	conn, err := dial(ctx, network(addr), addr)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	v, err := readStat(conn, "stats", "uptime")
	if err != nil {
		return 0, err
	}
	secs, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stats: uptime %q", v)
	}
	return time.Duration(secs) * time.Second, nil
}

// readStat sends cmd and returns the value of its STAT line name, or what
// the server said instead; a CLIENT_ERROR (memcached -Y: the connection
// did not authenticate) is an error.
func readStat(conn net.Conn, cmd, name string) (string, error) {
	if _, err := conn.Write([]byte(cmd + "\r\n")); err != nil {
		return "", err
	}
	sc := bufio.NewScanner(conn)
	setting := "no " + name + " line"
	for range maxSettingsLines {
		if !sc.Scan() {
			if sc.Err() != nil {
				return "", sc.Err()
			}
			return "", io.ErrUnexpectedEOF
		}
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "END":
			return setting, nil
		case strings.HasPrefix(line, "STAT "+name+" "):
			setting = strings.TrimPrefix(line, "STAT "+name+" ")
		case strings.HasPrefix(line, "CLIENT_ERROR"):
			return "", errors.New(line)
		case line == "ERROR" || strings.HasPrefix(line, "SERVER_ERROR"):
			return fmt.Sprintf("refused: %q", line), nil
		}
	}
	return "", fmt.Errorf("no END after %d lines", maxSettingsLines)
}
