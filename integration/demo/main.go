// Command demo shows zklock at work: it starts a local ZooKeeper (from
// Debian's zookeeper package, or a container when a Docker daemon answers
// and none is installed: see internal/testkit/harness), builds cmd/zklock,
// and runs four zklock processes on one lock path, each running a short
// shell command. With -v each reports when it waits, acquires (with its
// fencing token) and releases; their lines are prefixed with the worker's
// name, so the hand-over from one to the next can be followed. `zklock ls`
// shows the queue once while they wait. Then the loss signal: one more
// zklock holds the lock running a long command, the ZooKeeper server is
// stopped, and the holder says it was told the lock was lost (with the
// margin before the server could have let it go), stops its command and
// exits 76. Run it with `make demo`.
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	_ "github.com/zkrecipes/zkrecipes/integration" // a ZooKeeper container when none is installed
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
)

const (
	lockPath = "/demo/zklock"
	workers  = 4
	// limit bounds the whole demo.
	limit = 3 * time.Minute
)

var start = time.Now()

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()

	say("demo", "starting a local ZooKeeper ...")
	z, err := harness.LaunchZK(1)
	if err != nil {
		return err
	}
	defer z.Close()
	servers := z.ConnectString()
	say("demo", "ZooKeeper serving at %s", servers)

	dir, err := os.MkdirTemp("", "zklock-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	say("demo", "building zklock ...")
	bin, err := buildZklock(ctx, dir)
	if err != nil {
		return err
	}

	say("demo", "starting %d workers on lock %s; each holds it for a second", workers, lockPath)
	procs := make([]*worker, 0, workers)
	waited := 0
	defer func() { // on an early return
		for _, p := range procs[waited:] {
			_ = p.cmd.Process.Kill()
			_ = p.wait()
		}
	}()
	for i := 1; i <= workers; i++ {
		name := fmt.Sprintf("worker-%d", i)
		script := fmt.Sprintf(`echo "%s%s$ZKLOCK_TOKEN"; sleep 1`, name, workingLine)
		p, err := startPrefixed(ctx, name, bin, "--servers", servers, "-v", "--data", name,
			lockPath, "--", "sh", "-c", script)
		if err != nil {
			return err
		}
		procs = append(procs, p)
		// One at a time, so that they queue in order.
		if err := waitQueued(ctx, bin, servers, i); err != nil {
			return err
		}
	}

	out, err := exec.CommandContext(ctx, bin, "ls", "--servers", servers, lockPath).Output()
	if err != nil {
		return fmt.Errorf("zklock ls: %w", err)
	}
	say("demo", "zklock ls %s (position, role, kind, node, session, data):", lockPath)
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		say("ls", "%s", line)
	}

	var failed []string
	for _, p := range procs {
		err := p.wait()
		waited++
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			failed = append(failed, fmt.Sprintf("%s exited with status %d", p.name, ee.ExitCode()))
		case err != nil:
			failed = append(failed, fmt.Sprintf("%s: %v", p.name, err))
		}
	}
	if len(failed) > 0 {
		return errors.New(strings.Join(failed, "; "))
	}
	out, err = exec.CommandContext(ctx, bin, "ls", "--servers", servers, lockPath).Output()
	if err != nil {
		return fmt.Errorf("zklock ls: %w", err)
	}
	say("demo", "all %d workers done, one after the other; lock queue now empty: %v", workers, len(out) == 0)
	return lossSignal(ctx, z, bin)
}

// lossSignal runs a holder, stops the ZooKeeper it holds its lock on, and
// shows the holder being told: zklock -v prints the cause and the margin,
// sends SIGTERM to its command and exits 76.
func lossSignal(ctx context.Context, z *harness.ZK, bin string) error {
	members := z.Members()
	if z.External() || len(members) != 1 {
		say("demo", "the ZooKeeper is not this demo's to stop: the loss signal is not shown")
		return nil
	}
	servers := z.ConnectString()
	say("demo", "now a holder whose server goes away")
	p, err := startPrefixed(ctx, "holder", bin, "--servers", servers, "-v", "--data", "holder",
		"--grace", "1s",
		lockPath, "--", "sh", "-c", `echo "holder`+workingLine+`$ZKLOCK_TOKEN"; exec sleep 600`)
	if err != nil {
		return err
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = p.cmd.Process.Kill()
			_ = p.wait()
		}
	}()
	// Its command runs: zklock holds the lock (a node alone in the queue
	// may still be deciding).
	select {
	case <-p.working:
	case <-p.printed:
		stopped = true
		return fmt.Errorf("holder: exited before holding the lock: %v", p.wait())
	case <-ctx.Done():
		return fmt.Errorf("holder: waiting for its command: %w", ctx.Err())
	}
	say("demo", "stopping the ZooKeeper server at %s", servers)
	if err := members[0].StopErr(); err != nil {
		return fmt.Errorf("stopping ZooKeeper: %w", err)
	}
	err = p.wait()
	stopped = true
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitLockLost {
		return fmt.Errorf("holder: want exit status %d (lock lost), got %v", exitLockLost, err)
	}
	say("demo", "the holder was told before the server could let the lock go, stopped its command and exited %d", exitLockLost)
	return nil
}

// exitLockLost is zklock's exit status when the lock was lost while its
// command ran (zklock --help).
const exitLockLost = 76

// buildZklock builds cmd/zklock of the zkrecipes module (the directory
// integration/go.work uses) into dir.
func buildZklock(ctx context.Context, dir string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/zkrecipes/zkrecipes").Output()
	if err != nil {
		return "", fmt.Errorf("go list -m github.com/zkrecipes/zkrecipes: %w", err)
	}
	root := strings.TrimSpace(string(out))
	bin := filepath.Join(dir, "zklock")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/zklock")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/zklock: %w\n%s", err, out)
	}
	return bin, nil
}

// worker is one zklock process whose output is printed prefixed.
type worker struct {
	name    string
	cmd     *exec.Cmd
	printed chan struct{} // closed when all its output has been printed
	working chan struct{} // closed when its command has said it works
}

// workingLine is what a worker's command prints first, holding the lock.
const workingLine = " working with token "

// startPrefixed starts a zklock whose stdout and stderr lines are printed
// prefixed with name. The process gets SIGTERM if the demo dies.
func startPrefixed(ctx context.Context, name, bin string, args ...string) (*worker, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	cmd.Stdout, cmd.Stderr = w, w
	err = cmd.Start()
	w.Close() // the child has its copy
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	wk := &worker{name: name, cmd: cmd, printed: make(chan struct{}), working: make(chan struct{})}
	go func() {
		defer close(wk.printed)
		defer r.Close()
		sc := bufio.NewScanner(r)
		working := false
		for sc.Scan() {
			say(name, "%s", sc.Text())
			if !working && strings.HasPrefix(sc.Text(), name+workingLine) {
				working = true
				close(wk.working)
			}
		}
	}()
	return wk, nil
}

// wait waits for the worker and its output.
func (wk *worker) wait() error {
	err := wk.cmd.Wait()
	<-wk.printed
	return err
}

// waitQueued polls `zklock ls` until the lock has n nodes.
func waitQueued(ctx context.Context, bin, servers string, n int) error {
	for {
		out, err := exec.CommandContext(ctx, bin, "ls", "-q", "--servers", servers, lockPath).Output()
		if err == nil && strings.Count(string(out), "\n") >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d nodes on %s: %w", n, lockPath, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

var outMu sync.Mutex

// say prints one line with the time since the start and who says it.
func say(who, format string, args ...any) {
	outMu.Lock()
	defer outMu.Unlock()
	fmt.Printf("%6.2fs  %-9s %s\n", time.Since(start).Seconds(), who, fmt.Sprintf(format, args...))
}
