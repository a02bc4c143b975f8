//go:build linux

package memcachedlock_test

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// Of reading memcached's clock.
const (
	// pollWindow is how long before an expected tick the polling starts.
	pollWindow = 4 * time.Millisecond
	// clockMonotonic is CLOCK_MONOTONIC of <time.h>.
	clockMonotonic = 1
)

// monotonic is CLOCK_MONOTONIC in nanoseconds: the clock memcached's ticks
// read (its current_time is the whole seconds of it at each tick, less
// those at its start).
func monotonic() int64 {
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockMonotonic, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		panic(errno)
	}
	return ts.Nano()
}

// phase is the fraction of its second that a CLOCK_MONOTONIC instant is.
func phase(ns int64) time.Duration { return time.Duration(ns % 1e9) }

// sleepUntil waits until the monotonic clock reaches at; spin: the last
// millisecond without sleeping, for a start timed to a tenth of one.
func sleepUntil(at int64, spin bool) {
	if d := time.Duration(at-monotonic()) - 2*time.Millisecond; d > 0 {
		time.Sleep(d)
	}
	for monotonic() < at {
		if spin {
			runtime.Gosched()
		} else {
			time.Sleep(50 * time.Microsecond)
		}
	}
}

// tick is a step of memcached's clock.
type tick struct {
	at     int64 // CLOCK_MONOTONIC ns: midway between the polls before and after it
	spread int64 // half the time between them
	time   int64 // memcached's time after it
	step   int64 // how far it moved: 2 is a jump
}

func (k tick) String() string {
	return fmt.Sprintf("phase %.4fs ±%v, +%d", phase(k.at).Seconds(), time.Duration(k.spread).Round(time.Microsecond), k.step)
}

// memClock reads memcached's clock: the time field of stats, over a
// connection of its own.
type memClock struct {
	conn net.Conn
	r    *bufio.Reader
}

func dialMemClock(t *testing.T, addr string) *memClock {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return &memClock{conn: conn, r: bufio.NewReader(conn)}
}

// now is memcached's time.
func (c *memClock) now() (int64, error) {
	_ = c.conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.conn.Write([]byte("stats\r\n")); err != nil {
		return 0, err
	}
	v := int64(-1)
	for {
		line, err := c.r.ReadString('\n')
		if err != nil {
			return 0, err
		}
		if line == "END\r\n" {
			break
		}
		if s, ok := strings.CutPrefix(line, "STAT time "); ok {
			if v, err = strconv.ParseInt(strings.TrimSpace(s), 10, 64); err != nil {
				return 0, err
			}
		}
	}
	if v < 0 {
		return 0, errors.New("stats has no time")
	}
	return v, nil
}

// next returns the tick after last (the one that set memcached's time to
// last.time), polling from pollWindow before expect (at once when expect
// is 0) until it comes. A tick that came before the polling began is
// placed between last and the first poll.
func (c *memClock) next(last tick, expect int64) (tick, error) {
	if expect != 0 {
		sleepUntil(expect-int64(pollWindow), false)
	}
	before := last.at + last.spread
	deadline := monotonic() + 3e9
	for {
		sent := monotonic()
		v, err := c.now()
		got := monotonic()
		if err != nil {
			return tick{}, err
		}
		if v != last.time {
			return tick{at: (before + got) / 2, spread: (got - before) / 2, time: v, step: v - last.time}, nil
		}
		if got > deadline {
			return tick{}, fmt.Errorf("memcached's clock did not move in %v", time.Duration(got-before+1))
		}
		before = sent
		if expect == 0 || got > expect+int64(10*time.Millisecond) {
			time.Sleep(100 * time.Microsecond) // off schedule: poll less hard
		}
	}
}

// ticks watches n ticks.
func (c *memClock) ticks(t *testing.T, n int) []tick {
	t.Helper()
	before := monotonic()
	v, err := c.now()
	if err != nil {
		t.Fatal(err)
	}
	last := tick{at: before, time: v}
	var out []tick
	for i := range n {
		var expect int64
		if i > 0 {
			expect = last.at + 1e9
		}
		if last, err = c.next(last, expect); err != nil {
			t.Fatal(err)
		}
		out = append(out, last)
	}
	return out
}

// driftOf is how much more than a second memcached's ticks are apart, on
// average over ticks (all seen, one after the other).
func driftOf(ticks []tick) time.Duration {
	first, last := ticks[0], ticks[len(ticks)-1]
	return time.Duration((last.at-first.at)/int64(len(ticks)-1) - 1e9)
}

func phases(ticks []tick) string {
	s := make([]string, len(ticks))
	for i, k := range ticks {
		s[i] = fmt.Sprintf("%.4f", phase(k.at).Seconds())
	}
	return strings.Join(s, " ")
}
