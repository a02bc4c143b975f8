package memcachedlock

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
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
func (c *Client) checkServer(ctx context.Context) error {
	if !c.check || c.checked.Load() {
		return nil
	}
	if err := checkEvictions(ctx, c.dial, c.addr); err != nil {
		return err
	}
	c.checked.Store(true)
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
	stats, err := readStats(conn, "stats settings", "evictions")
	var refusal refused
	switch {
	case errors.As(err, &refusal):
		return fmt.Sprintf("refused: %q", string(refusal)), nil
	case err != nil:
		return "", err
	case stats["evictions"] == "":
		return "no evictions line", nil
	}
	return stats["evictions"], nil
}

// refused is the line with which the server refused a stats command
// (ERROR, SERVER_ERROR ...).
type refused string

func (r refused) Error() string { return "memcached refused: " + string(r) }

// readStats sends cmd and returns the values of its STAT lines named in
// names (a name with no line is left out), or the error the server
// answered: a CLIENT_ERROR (memcached -Y: the connection did not
// authenticate), or a refusal (refused).
func readStats(conn net.Conn, cmd string, names ...string) (map[string]string, error) {
	if _, err := conn.Write([]byte(cmd + "\r\n")); err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(conn)
	stats := make(map[string]string, len(names))
	for range maxSettingsLines {
		if !sc.Scan() {
			if sc.Err() != nil {
				return nil, sc.Err()
			}
			return nil, io.ErrUnexpectedEOF
		}
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "END":
			return stats, nil
		case strings.HasPrefix(line, "STAT "):
			if name, value, ok := strings.Cut(strings.TrimPrefix(line, "STAT "), " "); ok && slices.Contains(names, name) {
				stats[name] = value
			}
		case strings.HasPrefix(line, "CLIENT_ERROR"):
			return nil, errors.New(line)
		case line == "ERROR" || strings.HasPrefix(line, "SERVER_ERROR"):
			return nil, refused(line)
		}
	}
	return nil, fmt.Errorf("no END after %d lines", maxSettingsLines)
}
