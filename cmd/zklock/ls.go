package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/zkrecipes/zkrecipes/session"
)

// defaultLsTimeout is --timeout's default for ls: it bounds the whole of
// `zklock ls`, connection included.
const defaultLsTimeout = 30 * time.Second

const lsUsage = `Usage: zklock ls [flags] PATH

Prints the holders and the waiters of the lock at PATH in queue order, one
per line, fields separated by a tab:
  POSITION  number of nodes listed ahead (0 for the first)
  ROLE      holder or waiter; unknown for a node of a kind zklock does not know
  KIND      the lock the node belongs to: mutex (zklock's default), read or
            write (--read, --write: the read/write lock), exclusive
            (--exclusive), leader (--leader), semaphore (--semaphore N), or
            unknown
  NODE      the lock node's name
  SESSION   the session id owning the node (0x...)
  DATA      what the process stored (--data; zklock's default is HOSTNAME:PID),
            quoted as a Go string unless it is printable text without tabs
  HELD      for a holder, how long ago its node was made: "held 3.2s" (to a
            tenth of a second; "held 4m12s" from a minute on); "-" for the
            other nodes. A holder that queued made its node when it began
            to wait, so its wait is counted too. The time is this machine's
            clock against the server's (the node's ctime): clock skew
            shows in it (a negative difference is shown as 0.0s)
A free lock prints nothing and exits 0. A PATH that does not exist prints
nothing, says so on stderr and exits 66: a lock never used, a typo, or a
lock path ZooKeeper removed after its last use (the mutex's, the read/write
lock's, the election's and the semaphore's paths are container nodes, which
the server deletes once empty): a script that only asks "is it free?"
takes 0 and 66 alike. ls is for ZooKeeper locks only: the other backends
(--backend) have no ls.

-o json (or --json) prints JSON Lines, one object per node, in the order
above:
  {"position":0,"role":"holder","kind":"mutex","node":"_c_...-lock-0000000000",
   "session":"0x100a5f3c2d0000","data":"aG9zdDoxMjM=","held_ms":3215}
data is base64-encoded (any bytes, losslessly, as zklock watch --json);
held_ms, the HELD column in milliseconds, only for a holder.

The kind is told from the node names: "...lock-<seq>" is the mutex's (Curator's
InterProcessMutex), "...__READ__<seq>" and "...__WRIT__<seq>" are the read/write
lock's (Curator's InterProcessReadWriteLock), "lock" is the exclusive lock's,
"...latch-<seq>" the election's (Curator's LeaderLatch); a PATH with a
"leases" child is a semaphore's (Curator's InterProcessSemaphoreV2): its
lease nodes are listed as holders, the nodes queued in PATH/locks as waiters
(the one of these waiting for room has its lease nodes already: they are
listed as holders too).
Holders are decided by the lock's own rules: the mutex's first node; a writer
whose node is first; every reader with no writer ahead, so several readers
can be holders at once. The exclusive lock has a single node, its holder's,
listed first: its waiters create no nodes (they watch PATH) and are not shown.
Other nodes are listed with ROLE and KIND unknown: in queue order if their
names end in a sequence number, else last, by name.

Flags:
  -o, --output text|json   the output format (default text; json: JSON Lines, above);
                           --json is -o json
  --timeout DUR            give up after DUR, connecting included (default 30s; 0: never)
  --servers HOST:PORT,...  ZooKeeper servers (default $ZK_SERVERS, else 127.0.0.1:2181)
  --namespace PATH         prefix of every path on the server
  --session-timeout DUR    ZooKeeper session timeout (default 15s)
  --auth-file FILE         authenticate with the "digest USER:PASSWORD" lines of FILE
                           (needed to list a lock whose nodes are --acl creator)
  --tls-ca FILE            connect over TLS, trusting only the CAs in FILE
  --tls-cert FILE, --tls-key FILE  the client certificate and key, together
  -q, --quiet              print no error messages
  -v, --verbose            report connection trouble

Examples:
  zklock ls --servers zk1:2181 /jobs/backup
  zklock ls /data/catalog | awk -F '\t' '$2 == "holder"'
  zklock ls /jobs/backup | awk -F '\t' '$2 == "holder" { print $6, $7 }'
  zklock ls -o json /jobs/backup | jq -r 'select(.role == "holder") | .data | @base64d'

Exit status:
  0    listed (nothing for a free lock)
  64   usage error
  66   PATH does not exist
  69   ZooKeeper not reached within --timeout, or it refused zklock
       (credentials, ACL, TLS)
`

// lsOptions are ls's flags.
type lsOptions struct {
	conn    connOptions
	out     outputOptions
	json    bool
	timeout time.Duration // 0: never give up
}

// lsFlags is ls's flag set, setting o.
func lsFlags(o *lsOptions) *flag.FlagSet {
	fs := newFlagSet("zklock ls")
	o.conn.register(fs)
	o.out.register(fs)
	registerFormat(fs, &o.json)
	fs.Var(durationValue{d: &o.timeout}, "timeout", "give up after this long (0: never)")
	return fs
}

// lsMain is `zklock ls [flags] PATH`.
func lsMain(args []string, stdout, stderr io.Writer) int {
	o := lsOptions{timeout: defaultLsTimeout}
	fs := lsFlags(&o)
	path, err := parseLs(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, lsUsage)
		return exitOK
	}
	if err == nil {
		err = errors.Join(o.conn.validate(), o.out.validate())
	}
	if err != nil {
		return usageError(stderr, "ls: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if o.timeout > 0 {
		ctx, cancel = context.WithTimeoutCause(ctx, o.timeout, timedOut{o.timeout})
		defer cancel()
	}
	conn := &o.conn
	client, rep, code := connectOneShot(ctx, "ls", conn, o.out, stderr,
		session.WithConnectionTimeout(connectionBound(o.timeout)))
	if client == nil {
		return code
	}
	defer client.Close()
	entries, err := listLock(ctx, client, path)
	switch {
	case errors.Is(err, errNoLock):
		rep.errorf("ls: %s does not exist", path)
		return exitNoLock
	case err != nil:
		rep.errorf("ls: %s", zkFailure(conn, err, fmt.Sprintf("listing lock %s: %v", path, err)))
		return exitUnavailable
	}
	now := time.Now()
	if o.json {
		enc := json.NewEncoder(stdout)
		for i, e := range entries {
			if err := enc.Encode(lsRecord(i, e, now)); err != nil {
				rep.errorf("ls: %v", err)
				return exitIOErr
			}
		}
		return exitOK
	}
	for i, e := range entries {
		fmt.Fprintf(stdout, "%d\t%s\t%s\t%s\t0x%x\t%s\t%s\n", i, e.role, e.kind, e.node, e.session, displayData(e.data),
			heldField(e, now))
	}
	return exitOK
}

// lsJSON is one line of ls -o json: a node, as the text columns show it
// (HELD in milliseconds, for a holder only; the data base64-encoded, as
// watch --json gives it).
type lsJSON struct {
	Position int    `json:"position"`
	Role     string `json:"role"`
	Kind     string `json:"kind"`
	Node     string `json:"node"`
	Session  string `json:"session"`
	Data     []byte `json:"data"`
	HeldMs   *int64 `json:"held_ms,omitempty"`
}

func lsRecord(i int, e lockEntry, now time.Time) lsJSON {
	r := lsJSON{Position: i, Role: e.role, Kind: e.kind, Node: e.node, Session: fmt.Sprintf("0x%x", e.session), Data: e.data}
	if e.role == roleHolder && !e.created.IsZero() {
		ms := max(now.Sub(e.created), 0).Milliseconds()
		r.HeldMs = &ms
	}
	return r
}

// heldField is ls's HELD column: "held 3.2s", the time since a holder's
// node was created (by this machine's clock against the server's: a
// negative difference, from clock skew, shows as 0s), or "-" for a
// waiter, an unknown node, or a holder whose node went meanwhile.
func heldField(e lockEntry, now time.Time) string {
	if e.role != roleHolder || e.created.IsZero() {
		return "-"
	}
	return "held " + roundHeld(now.Sub(e.created))
}

// roundHeld shows a hold time in seconds to a tenth, or to the second
// from a minute on: "0.0s", "3.2s", "4m12s", "26h3m0s".
func roundHeld(d time.Duration) string {
	d = max(d, 0)
	if d < time.Minute-50*time.Millisecond {
		return strconv.FormatFloat(d.Round(100*time.Millisecond).Seconds(), 'f', 1, 64) + "s"
	}
	return d.Round(time.Second).String()
}

// parseLs parses ls's arguments: flags, PATH, and flags again.
func parseLs(fs *flag.FlagSet, args []string) (string, error) {
	if err := fs.Parse(args); err != nil {
		return "", err
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return "", errors.New("missing PATH")
	}
	path := rest[0]
	if err := validateLockPath(path); err != nil {
		return "", err
	}
	if err := fs.Parse(rest[1:]); err != nil {
		return "", err
	}
	if len(fs.Args()) > 0 {
		return "", fmt.Errorf("unexpected argument %q after PATH", fs.Args()[0])
	}
	return path, nil
}

// displayData shows a node's data on one line: as it is when it is
// printable text without tabs, else as a quoted Go string.
func displayData(b []byte) string {
	s := string(b)
	if !utf8.ValidString(s) {
		return strconv.Quote(s)
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// zkFailure is the message of ls's or watch's failure err: a refusal's
// (see whatRefused), else msg.
func zkFailure(conn *connOptions, err error, msg string) string {
	what, cause, ok := whatRefused(err)
	if !ok {
		return msg
	}
	o := &runOptions{conn: *conn, backend: backendOptions{name: backendZK}}
	return refusedMessage(conn.server(), what, cause, o.refusalHint(what))
}
