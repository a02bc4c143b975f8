package main

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLs(t *testing.T) {
	srv := zkServers(t)
	path := lockPath(t)
	c := zkClient(t, srv)

	code, p := runZklock(t, "ls", "--servers", srv, path)
	require.Equal(t, exitNoLock, code, "a lock path that does not exist is not a free lock: stderr %s", p.stderr)
	assert.Empty(t, p.stdout.String(), "a lock path that does not exist lists nothing")
	assert.Equal(t, "zklock: ls: "+path+" does not exist\n", p.stderr.String())

	holder := holdLock(t, srv, path, "--data", "holder data")
	// Waiters join one at a time, so the queue order is known.
	w1 := startZklock(t, "--servers", srv, path, "--", "true") // default data: HOSTNAME:PID
	waitParticipants(t, c, path, 2)
	w2 := startZklock(t, "--servers", srv, "--data", "tab\there", path, "--", "true")
	ps := waitParticipants(t, c, path, 3)

	host, err := os.Hostname()
	require.NoError(t, err)
	wantData := []string{"holder data", fmt.Sprintf("%s:%d", host, w1.cmd.Process.Pid), `"tab\there"`}
	wantRole := []string{"holder", "waiter", "waiter"}
	var want []string
	for i, p := range ps {
		want = append(want, fmt.Sprintf("%d\t%s\tmutex\t%s\t0x%x\t%s", i, wantRole[i], p.Name, p.SessionID, wantData[i]))
	}
	code, p = runZklock(t, "ls", "--servers", srv, path)
	require.Equal(t, 0, code, "stderr: %s", p.stderr)
	assert.Equal(t, strings.Join(want, "\n")+"\n", withoutHeld(t, p.stdout.String()))
	assert.Empty(t, p.stderr.String())

	// Flags may also follow PATH.
	code, p = runZklock(t, "ls", path, "--servers", srv)
	require.Equal(t, 0, code, "stderr: %s", p.stderr)
	assert.Equal(t, strings.Join(want, "\n")+"\n", withoutHeld(t, p.stdout.String()))

	for _, w := range []*proc{w1, w2} {
		w.signal(t, syscall.SIGTERM)
		assert.Equal(t, 143, w.wait(t))
	}
	holder.closeStdin(t)
	require.Equal(t, 0, holder.wait(t))
	code, p = runZklock(t, "ls", "--servers", srv, path)
	assert.Contains(t, freeOrGone, code, "stderr: %s", p.stderr)
	assert.Empty(t, p.stdout.String(), "a free lock lists nothing")
}

// ls -o json: one JSON object per node, parsed here, the same as the text
// columns; --json is the same.
func TestLsJSON(t *testing.T) {
	srv := zkServers(t)
	path := lockPath(t)
	c := zkClient(t, srv)
	holder := holdLock(t, srv, path, "--data", "holder\tdata")
	w := startZklock(t, "--servers", srv, "--data", "waiter", path, "--", "true")
	ps := waitParticipants(t, c, path, 2)

	for _, flags := range [][]string{{"-o", "json"}, {"--json"}, {"--output", "json"}} {
		code, p := runZklock(t, append(append([]string{"ls", "--servers", srv}, flags...), path)...)
		require.Equal(t, exitOK, code, "stderr: %s", p.stderr)
		dec := json.NewDecoder(strings.NewReader(p.stdout.String()))
		var got []lsJSON
		for dec.More() {
			var r lsJSON
			require.NoError(t, dec.Decode(&r), "%s", p.stdout)
			got = append(got, r)
		}
		require.Len(t, got, 2, "%s", p.stdout)
		assert.Equal(t, strings.Count(p.stdout.String(), "\n"), 2, "JSON Lines: one object per line")
		for i, r := range got {
			assert.Equal(t, i, r.Position)
			assert.Equal(t, ps[i].Name, r.Node)
			assert.Equal(t, fmt.Sprintf("0x%x", ps[i].SessionID), r.Session)
			assert.Equal(t, "mutex", r.Kind)
		}
		assert.Equal(t, "holder", got[0].Role)
		assert.Equal(t, []byte("holder\tdata"), got[0].Data)
		require.NotNil(t, got[0].HeldMs, "a holder's hold time")
		assert.GreaterOrEqual(t, *got[0].HeldMs, int64(0))
		assert.Equal(t, "waiter", got[1].Role)
		assert.Equal(t, []byte("waiter"), got[1].Data)
		assert.Nil(t, got[1].HeldMs, "a waiter has no hold time")
	}

	code, p := runZklock(t, "ls", "--servers", srv, "-o", "xml", path)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, p.stderr.String(), `unknown format "xml": text or json`)

	w.signal(t, syscall.SIGTERM)
	assert.Equal(t, 143, w.wait(t))
	holder.closeStdin(t)
	require.Equal(t, exitOK, holder.wait(t))
}

// ls --timeout bounds the connection: a ZooKeeper that cannot be reached
// exits 69 once it passes, naming the last error.
func TestLsTimeout(t *testing.T) {
	code, p := runZklock(t, "ls", "--servers", "127.0.0.1:1", "--timeout", "1s", "/x")
	assert.Equal(t, exitUnavailable, code)
	assert.Contains(t, p.stderr.String(), "timed out after 1s")
	assert.Contains(t, p.stderr.String(), "connection refused")
}

// heldRe is ls's HELD column for a holder: "held 3.2s", "held 4m12s".
var heldRe = regexp.MustCompile(`^held ([0-9]+\.[0-9]s|([0-9]+h)?[0-9]+m[0-9]+s)$`)

// withoutHeld checks ls's last column, HELD (a hold time for a holder, "-"
// for any other node), and returns the output without it, to compare the
// other columns exactly: the hold time depends on the clock.
func withoutHeld(t *testing.T, out string) string {
	t.Helper()
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if line == "" {
			continue
		}
		i := strings.LastIndexByte(line, '\t')
		require.Positive(t, i, "ls line %q has no HELD column", line)
		rest, held := line[:i], line[i+1:]
		if f := strings.Split(rest, "\t"); len(f) > 1 && f[1] == "holder" {
			assert.Regexp(t, heldRe, held, "the holder's HELD in %q", line)
		} else {
			assert.Equal(t, "-", held, "HELD of a node that does not hold, in %q", line)
		}
		b.WriteString(rest + "\n")
	}
	return b.String()
}

// ls shows how long the holder has held the lock (since its node was
// made), and "-" for a waiter.
func TestLsHeld(t *testing.T) {
	srv := zkServers(t)
	path := lockPath(t)
	c := zkClient(t, srv)
	holder := holdLock(t, srv, path, "--data", "h")
	waiter := startZklock(t, "--servers", srv, path, "--", "true")
	waitParticipants(t, c, path, 2)

	code, p := runZklock(t, "ls", "--servers", srv, path)
	require.Equal(t, 0, code, "stderr: %s", p.stderr)
	lines := strings.Split(strings.TrimSuffix(p.stdout.String(), "\n"), "\n")
	require.Len(t, lines, 2, "ls:\n%s", p.stdout)
	h, w := strings.Split(lines[0], "\t"), strings.Split(lines[1], "\t")
	require.Len(t, h, 7, "POSITION ROLE KIND NODE SESSION DATA HELD: %q", lines[0])
	require.Len(t, w, 7, "%q", lines[1])
	assert.Equal(t, []string{"0", "holder", "h"}, []string{h[0], h[1], h[5]})
	assert.Regexp(t, heldRe, h[6])
	assert.Equal(t, "waiter", w[1])
	assert.Equal(t, "-", w[6])

	holder.closeStdin(t)
	require.Equal(t, 0, holder.wait(t))
	require.Equal(t, 0, waiter.wait(t), "stderr: %s", waiter.stderr)
}

// The HELD column's rounding, and heldRe matches every form.
func TestRoundHeld(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second:                           "0.0s",
		0:                                      "0.0s",
		40 * time.Millisecond:                  "0.0s",
		100 * time.Millisecond:                 "0.1s",
		3249 * time.Millisecond:                "3.2s",
		59949 * time.Millisecond:               "59.9s",
		59951 * time.Millisecond:               "1m0s",
		4*time.Minute + 12400*time.Millisecond: "4m12s",
		26*time.Hour + 3*time.Minute:           "26h3m0s",
	} {
		assert.Equal(t, want, roundHeld(d), "%v", d)
		assert.Regexp(t, heldRe, "held "+roundHeld(d))
	}
}
