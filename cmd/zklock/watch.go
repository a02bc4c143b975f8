package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/zkrecipes/zkrecipes/cache"
	"github.com/zkrecipes/zkrecipes/session"
)

// defaultWatchTimeout is --timeout's default for watch: how long it waits
// for a ZooKeeper server, at the start and after a connection is lost.
const defaultWatchTimeout = 30 * time.Second

const watchUsage = `Usage: zklock watch [flags] PATH

Prints the nodes at and below PATH, then one line per change, as they
happen, until interrupted (SIGINT, SIGTERM or SIGHUP: exit 0), like
etcdctl watch --prefix. A line has these fields, separated by a tab:
  KIND      exists (the current state, printed first: one line per node,
            sorted by path), then created, changed (the node's data was
            written) or deleted
  PATH      the node's path (without --namespace)
  MZXID     the zxid of the node's last write (0x..., as zkCli shows it);
            for deleted, the last one zklock saw
  LENGTH    the length of the node's data in bytes
  DATA      with --data only: the data, quoted as a Go string unless it is
            printable text without tabs
A change of a node's children alone is not a change of the node: it is
told by its children's own lines. A node deleted and created again is
deleted, then created (told by its creation zxid, not by its version). A
PATH that does not exist prints nothing until it is created (watch never
creates it). ZooKeeper tells watchers that a node changed, not every
value it had: a node written twice in quick succession may be printed
once, with its latest data.

Reconnections and new sessions do not end the watch. When the connection
is suspended, zklock says so on stderr ("stale"); once connected again
it reads the view again and prints exactly what changed meanwhile (a
node written, created or deleted while away, one line each; nothing for
a node left alone), then says so ("fresh"). A node whose ACL refuses
zklock's identity the read (see --auth-file) is not printed, nor is its
subtree: zklock says so on stderr ("refused", once per node).

--timeout DUR (default 30s; 0: never give up) bounds how long zklock waits
for ZooKeeper: the start (connection and the first read of PATH must
finish within DUR) and every loss of the connection (zklock must be
connected to a server again within DUR of losing it). Past it, zklock
says why and exits 69. It is the only way the watch ends with an error.

Flags (before or after PATH):
  --depth N                how many levels below PATH to watch (default: all)
  --children               PATH and its children only (--depth 1)
  --node                   PATH alone (--depth 0)
  --data                   print the data too (kept in memory: without --data
                           zklock keeps each node's stat only)
  -o json, --output json, --json  print JSON Lines (below) instead (default -o text)
  --timeout DUR            see above (default 30s)
  --servers HOST:PORT,...  ZooKeeper servers (default $ZK_SERVERS, else 127.0.0.1:2181)
  --namespace PATH         prefix of every path on the server
  --session-timeout DUR    ZooKeeper session timeout (default 15s)
  --auth-file FILE         authenticate with the "digest USER:PASSWORD" lines of FILE
                           (needed to read nodes whose ACL is --acl creator)
  --tls-ca FILE            connect over TLS, trusting only the CAs in FILE
  --tls-cert FILE, --tls-key FILE  the client certificate and key, together
  -q, --quiet              print no messages on stderr ("stale" and "fresh"
                           included; with --json they are records on stdout)
  -v, --verbose            also report the connection's states, the session
                           and when the first read is done

--json prints one JSON object per line. A node's record:
  {"type":"exists","path":"/app/a","mzxid":4294967301,"czxid":4294967300,
   "version":1,"data_length":2,"data":"b2s="}
with type exists, created, changed or deleted; mzxid and czxid as decimal
numbers; data only with --data, base64-encoded (any bytes, losslessly:
jq -r '.data | @base64d' decodes it). The other records have type alone:
  {"type":"initialized"}   after the current state: what follows are changes
  {"type":"stale"}         the connection was suspended (see above)
  {"type":"fresh"}         read again: what changed meanwhile came before it
  {"type":"refused","path":"/app/b","error":"..."}
                           the node's ACL refuses zklock the read: not printed

Exit status:
  0    interrupted by SIGINT, SIGTERM or SIGHUP
  64   usage error
  69   no ZooKeeper server within --timeout (at the start, or after the
       connection was lost), or ZooKeeper refused zklock (credentials, ACL,
       TLS)
  74   the output could not be written

Examples:
  zklock watch --servers zk1:2181 /config
  zklock watch --children /jobs/backup        # a lock's queue, live
  zklock watch --json --data /services | jq -c 'select(.type == "created")'
`

// watchOptions is a parsed `zklock watch [flags] PATH`.
type watchOptions struct {
	conn    connOptions
	out     outputOptions
	path    string
	depth   int // cache.DefaultDepth for the whole subtree
	data    bool
	json    bool
	timeout time.Duration // 0: never give up
}

// watchFlags is watch's flag set, setting o and the depth flags.
func watchFlags(o *watchOptions, children, node *bool) *flag.FlagSet {
	fs := newFlagSet("zklock watch")
	o.conn.register(fs)
	o.out.register(fs)
	fs.IntVar(&o.depth, "depth", cache.DefaultDepth, "levels below PATH to watch (default: all)")
	fs.BoolVar(children, "children", false, "PATH and its children (--depth 1)")
	fs.BoolVar(node, "node", false, "PATH alone (--depth 0)")
	fs.BoolVar(&o.data, "data", false, "print the data too")
	registerFormat(fs, &o.json)
	o.timeout = defaultWatchTimeout
	fs.Var(durationValue{d: &o.timeout}, "timeout", "how long to wait for ZooKeeper (0: forever)")
	return fs
}

// parseWatch parses watch's arguments: flags, PATH, and flags again. The
// error is a usage error, or flag.ErrHelp for -h/--help.
func parseWatch(args []string) (*watchOptions, error) {
	o := &watchOptions{}
	var children, node bool
	fs := watchFlags(o, &children, &node)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return nil, errors.New("missing PATH")
	}
	o.path = rest[0]
	if err := session.ValidatePath(o.path); err != nil {
		return nil, errors.New("invalid PATH: " + invalidReason(err))
	}
	if err := fs.Parse(rest[1:]); err != nil {
		return nil, err
	}
	if len(fs.Args()) > 0 {
		return nil, fmt.Errorf("unexpected argument %q after PATH", fs.Args()[0])
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var given []string
	for _, name := range []string{"depth", "children", "node"} {
		if set[name] {
			given = append(given, "--"+name)
		}
	}
	if err := notTogether(given); err != nil {
		return nil, err
	}
	switch {
	case set["depth"] && o.depth < 0:
		return nil, fmt.Errorf("--depth %d: want 0 or more (without --depth: the whole subtree)", o.depth)
	case children:
		o.depth = 1
	case node:
		o.depth = 0
	}
	if err := errors.Join(o.conn.validate(), o.out.validate()); err != nil {
		return nil, err
	}
	return o, nil
}

// watchMain is `zklock watch [flags] PATH`.
func watchMain(args []string, stdout, stderr io.Writer) int {
	o, err := parseWatch(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, watchUsage)
		return exitOK
	}
	if err != nil {
		return usageError(stderr, "watch: %v", err)
	}
	// Caught from the start: a signal while connecting ends the watch too.
	sigs := catchSignals()
	defer sigs.stop()
	rep := newReporter(stderr, o.out)
	rep.secrets = longestFirst(o.conn.secrets())
	w := &watcher{o: o, rep: rep, sigs: sigs, out: newWatchPrinter(stdout, o)}
	return w.run()
}

// watcher is one `zklock watch`.
type watcher struct {
	o    *watchOptions
	rep  *reporter
	sigs *signals
	out  *watchPrinter
}

// run connects, starts the cache and prints until a signal, or until
// ZooKeeper stays out of reach for --timeout. It returns the exit status.
func (w *watcher) run() int {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	stopWatch := w.sigs.cancelOnSignal(cancel)
	defer stopWatch()
	start := time.Now()
	startCtx := ctx
	if w.o.timeout > 0 {
		var stop context.CancelFunc
		startCtx, stop = context.WithTimeoutCause(ctx, w.o.timeout, timedOut{w.o.timeout})
		defer stop()
	}

	w.rep.infof("watch %s: connecting to ZooKeeper at %s", w.o.path, w.o.conn.servers)
	client, err := connect(startCtx, w.o.conn, w.rep, session.WithConnectionTimeout(w.connectionTimeout()))
	switch {
	case errors.Is(err, session.ErrInvalidArgument):
		return usageError(w.rep.w, "watch: invalid --servers: %s", invalidReason(err))
	case err != nil && w.interrupted(ctx):
		return exitOK
	case err != nil:
		w.rep.errorf("watch %s: %s", w.o.path, zkFailure(&w.o.conn, err,
			fmt.Sprintf("cannot connect to ZooKeeper at %s within --timeout %v: %v", w.o.conn.servers, w.o.timeout, err)))
		return exitUnavailable
	}
	defer client.Close()
	if s := client.CurrentSession(); s != nil {
		w.rep.infof("connected to ZooKeeper at %s (session 0x%x%s)", w.o.conn.servers, s.ID(), w.o.conn.security())
	}
	// The states are followed from before the cache starts, so that a loss
	// of the connection is never missed.
	states, err := client.Subscribe(ctx)
	if err != nil {
		w.rep.errorf("watch %s: %v", w.o.path, err)
		return exitUnavailable
	}
	// One read of PATH before the cache: a refused PATH ends the watch at
	// once, with what to check (the cache would go on, with an empty view
	// and a "refused" line). Any other failure is the cache's to retry,
	// within --timeout.
	if _, _, err := client.Get(startCtx, w.o.path); err != nil {
		if _, _, refused := whatRefused(err); refused {
			w.rep.errorf("watch %s: %s", w.o.path, zkFailure(&w.o.conn, err, err.Error()))
			return exitUnavailable
		}
	}
	x, err := cache.Start(ctx, client, w.o.path, w.cacheOptions()...)
	switch {
	case err != nil && w.interrupted(ctx):
		return exitOK
	case err != nil:
		w.rep.errorf("watch %s: %v", w.o.path, err) // not reached: the options were checked
		return exitSoftware
	}
	defer x.Close()
	return w.loop(ctx, x, states, start, client.State())
}

// connectionTimeout is session.Connect's bound: see connectionBound.
func (w *watcher) connectionTimeout() time.Duration { return connectionBound(w.o.timeout) }

// connectionBound is session.Connect's bound for a --timeout of d (ls,
// watch): d, or no bound for --timeout 0 (the context then decides).
func connectionBound(d time.Duration) time.Duration {
	if d == 0 {
		return math.MaxInt64
	}
	return d
}

func (w *watcher) cacheOptions() []cache.Option {
	opts := []cache.Option{cache.WithDepth(w.o.depth)}
	if !w.o.data {
		opts = append(opts, cache.WithoutData())
	}
	return opts
}

// interrupted reports whether a signal ended ctx.
func (w *watcher) interrupted(ctx context.Context) bool {
	var sig interrupted
	return errors.As(context.Cause(ctx), &sig)
}
