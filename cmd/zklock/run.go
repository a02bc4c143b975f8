package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/znode"
)

// Bounds of zklock's own ZooKeeper calls after the wait.
const (
	releaseTimeout  = recipes.DefaultReleaseTimeout // deleting the lock node
	describeTimeout = 2 * time.Second               // looking up the holder for a message
)

// runMain is `zklock [flags] PATH -- COMMAND [ARGS...]`.
func runMain(args []string, stdout, stderr io.Writer) int {
	o, err := parseRun(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, usageText)
		return exitOK
	}
	if err != nil {
		return usageError(stderr, "%v", err)
	}
	if !o.dataSet {
		o.data = defaultData()
	}
	rep := newReporter(stderr, o.out)
	rep.secrets = longestFirst(append(o.backend.secrets(), o.conn.secrets()...))
	r := &runner{o: o, rep: rep, stderr: stderr}
	return r.run()
}

// defaultData is what --data defaults to: HOSTNAME:PID.
func defaultData() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		h = "localhost"
	}
	return h + ":" + strconv.Itoa(os.Getpid())
}

// timedOut is the cause of a wait ended by --timeout.
type timedOut struct{ d time.Duration }

func (e timedOut) Error() string { return "timed out after " + e.d.String() }

// runner is one lock-and-run.
type runner struct {
	o      *runOptions
	rep    *reporter
	stderr io.Writer
	sigs   *signals
	client *session.Client // ZooKeeper's; nil for the other backends
	lock   recipes.Locker  // nil until connected
	// newLock makes the lock on ZooKeeper when set (register's
	// registration), instead of the lock the flags name.
	newLock func(*session.Client) (recipes.Locker, error)
	close   func()      // closes the backend's clients
	trace   *leaseTrace // -v's report of the wait and the lease's end; nil without -v
}

// lockName names the lock in messages as its package does, and as its
// errors do (its String): "mutex PATH", "rwlock PATH (read)", "rwlock PATH
// (write)", "exclusive PATH", "leader PATH", "semaphore PATH (1 lease)";
// "redislock NAME", "redlock NAME", "memcachedlock NAME", "sqllock NAME"
// on the other backends. Before the lock is made (while connecting) it is PATH.
func (r *runner) lockName() string {
	if s, ok := r.lock.(fmt.Stringer); ok {
		return s.String()
	}
	return r.o.path
}

func (r *runner) run() int {
	r.sigs = catchSignals()
	defer r.sigs.stop()

	cmd, code, msg := resolveCommand(r.o.argv)
	if cmd == nil {
		r.rep.errorf("%s", msg)
		return code
	}

	lease, code := r.acquire()
	if r.close != nil {
		defer r.close() // ZooKeeper: ends the session, so nothing of ours outlives it
	}
	if lease == nil {
		return code
	}
	r.rep.infof("acquired %s (%s)%s", r.lockName(), describeLease(lease), r.trace.waited())
	if sig := r.sigs.pending(); sig != nil {
		// Asked to stop just as the lock came: do not start COMMAND.
		r.release(lease)
		r.rep.errorf("interrupted by %s before running %s", signalName(toSyscall(sig)), r.o.argv[0])
		return signalExit(toSyscall(sig))
	}
	return r.runHolding(cmd, lease)
}

// describeLease is "token N, node PATH" for messages (each when it has
// one), or what a lease that is no lock says of itself.
func describeLease(lease recipes.Lease) string {
	if d, ok := lease.(interface{ describe() string }); ok {
		return d.describe() // not a lock (register's registration)
	}
	var parts []string
	if token, ok := lease.Token(); ok {
		parts = append(parts, "token "+strconv.FormatInt(token, 10))
	} else {
		parts = append(parts, "no fencing token")
	}
	if zl, ok := lease.(znode.Lease); ok {
		parts = append(parts, "node "+zl.Node())
	}
	return strings.Join(parts, ", ")
}

// open connects to the backend and sets r.lock (and, for ZooKeeper,
// r.client), as long as ctx allows. It returns an exit status and false
// when it cannot.
func (r *runner) open(ctx context.Context) (int, bool) {
	if r.o.backend.name != backendZK {
		lock, closeAll, err := r.o.backend.openCompat(ctx, r.o.path, r.rep)
		switch {
		case errors.Is(err, recipes.ErrInvalidArgument):
			return usageError(r.stderr, "%s", redact(err.Error(), r.rep.secrets)), false
		case err != nil:
			return r.notAcquired(ctx, err), false
		}
		r.lock, r.close = lock, closeAll
		r.rep.infof("connected to %s%s", r.o.backend.name, r.o.backend.security())
		return exitOK, true
	}
	client, err := connect(ctx, r.o.conn, r.rep)
	if err != nil {
		if errors.Is(err, session.ErrInvalidArgument) {
			return usageError(r.stderr, "invalid --servers: %s", invalidReason(err)), false
		}
		return r.notAcquired(ctx, fmt.Errorf("cannot connect to ZooKeeper at %s: %w", r.o.conn.servers, err)), false
	}
	r.client, r.close = client, client.Close
	if s := client.CurrentSession(); s != nil {
		r.rep.infof("connected to ZooKeeper at %s (session 0x%x%s)", r.o.conn.servers, s.ID(), r.o.conn.security())
	}
	var lock recipes.Locker
	if r.newLock != nil {
		lock, err = r.newLock(client)
	} else {
		lock, err = newLocker(client, r.o.path, r.o.kind, []byte(r.o.data), r.o.maxLeases)
	}
	if err != nil {
		return usageError(r.stderr, "%v", err), false
	}
	r.lock = lock
	return exitOK, true
}

// acquire connects and waits for the lock, as long as --timeout and signals
// allow. Without a lease it returns the exit status.
func (r *runner) acquire() (recipes.Lease, int) {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	stopWatch := r.sigs.cancelOnSignal(cancel)
	defer stopWatch()
	if r.o.timeout > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeoutCause(ctx, r.o.timeout, timedOut{r.o.timeout})
		defer stop()
	}

	if code, ok := r.open(ctx); !ok {
		return nil, code
	}
	r.rep.infof("waiting for %s", r.lockName())
	if r.rep.verbose && r.newLock == nil { // a registration is traced by no lock package
		// The lease keeps the trace: its end is reported too.
		r.trace = newLeaseTrace(r.rep, r.lockName())
		ctx = locktrace.WithTrace(ctx, r.trace.trace())
	}
	var lease recipes.Lease
	var err error
	if r.o.try {
		lease, err = r.lock.TryAcquire(ctx)
	} else {
		stopFollow := r.followWait()
		lease, err = r.lock.Acquire(ctx)
		stopFollow()
	}
	stopWatch()
	if msg := r.trace.gaveUp(); msg != "" {
		r.rep.infof("%s", msg)
	}
	var sig interrupted
	if err == nil && errors.As(context.Cause(ctx), &sig) {
		// Taken just as a signal ended the wait: give it back.
		r.release(lease)
		err = recipes.NotAcquired(ctx)
	}
	switch {
	case err == nil:
		return lease, exitOK
	case errors.Is(err, recipes.ErrQuiet):
		// Before ErrLocked, which it also is: nobody may hold it.
		r.rep.errorf("%s is not granted to anyone yet: quiet period after a restart of %s (it may have forgotten a holder; it grants the lock again after a TTL)",
			r.lockName(), r.o.server())
		return nil, exitQuiet
	case errors.Is(err, recipes.ErrLocked):
		r.rep.errorf("%s is held%s", r.lockName(), r.describeHolder())
		return nil, exitTempFail
	default:
		return nil, r.notAcquired(ctx, fmt.Errorf("cannot take %s: %w", r.lockName(), err))
	}
}

// runHolding runs COMMAND under lease and returns the exit status.
func (r *runner) runHolding(cmd *command, lease recipes.Lease) int {
	r.sigs.catchForwarded()
	env := append(os.Environ(), "ZKLOCK_PATH="+r.o.path)
	if token, ok := lease.Token(); ok { // absent where the backend has none (redlock)
		env = append(env, "ZKLOCK_TOKEN="+strconv.FormatInt(token, 10))
	}
	var nodeGone <-chan error // ZooKeeper: an operator deleting the node breaks the lock
	if zl, ok := lease.(znode.Lease); ok {
		env = append(env, "ZKLOCK_NODE="+zl.Node())
		nodeGone = watchNode(r.client, zl)
	}
	ch, err := startChild(cmd, env, controllingTerminal())
	if err != nil {
		code, msg := startFailure(r.o.argv[0], err)
		r.rep.errorf("%s", msg)
		r.release(lease)
		return code
	}
	for {
		select {
		case res := <-ch.exit:
			return r.finish(lease, res)
		case sig := <-r.sigs.ch:
			_ = ch.signal(toSyscall(sig))
		case <-lease.Done():
			return r.lost(ch, context.Cause(lease.Context()))
		case cause := <-nodeGone:
			return r.lost(ch, cause)
		}
	}
}

// lost handles a lock lost while COMMAND runs: COMMAND's group is
// terminated, the cause reported, and the status is exitLockLost. The lease
// is not released: the library removes the node of a lost lease itself,
// and closing the client ends the session.
func (r *runner) lost(ch *child, cause error) int {
	res, killed := ch.terminate(r.o.grace, r.sigs.ch)
	how := "SIGTERM sent to its process group"
	if killed {
		how += fmt.Sprintf(", then SIGKILL after --grace %v", r.o.grace)
	}
	status := fmt.Sprintf("exited with status %d", res.code)
	if res.err != nil {
		status = res.err.Error()
	}
	r.trace.awaitEnd() // -v: the cause and the margin, as the library tells them
	r.rep.errorf("%s lost while %s was running: %v (%s; %s %s)",
		r.lockName(), r.o.argv[0], cause, how, r.o.argv[0], status)
	return exitLockLost
}

// finish releases the lock after COMMAND exited and returns the status:
// COMMAND's, unless the lock turned out lost before it was released.
func (r *runner) finish(lease recipes.Lease, res exitResult) int {
	if res.err != nil {
		r.rep.errorf("%v", res.err)
		r.release(lease)
		return exitSoftware
	}
	// Lost after COMMAND's end was seen, or found lost by Release: the loss
	// may have come before COMMAND's end, so its work may not have been
	// exclusive (as recipes.WithLock reports it).
	err := lease.Err()
	if err == nil {
		if err = r.release(lease); !errors.Is(err, recipes.ErrLockLost) {
			return res.code
		}
	}
	r.trace.awaitEnd()
	r.rep.errorf("%s was lost before it was released (%s exited with status %d; its work may not have been exclusive): %v",
		r.lockName(), r.o.argv[0], res.code, err)
	return exitLockLost
}

// release gives the lock back, bounded in time. A failure other than a lost
// lock is reported; the node still goes when the client closes its session.
func (r *runner) release(lease recipes.Lease) error {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	err := lease.Release(ctx)
	switch {
	case err == nil:
		r.rep.infof("released %s", r.lockName())
	case errors.Is(err, recipes.ErrLockLost):
	default:
		r.rep.errorf("releasing %s: %v (its node goes when the session is closed)", r.lockName(), err)
	}
	return err
}
