// Command demo starts a local ZooKeeper (from Debian's zookeeper package),
// connects a session to it, restarts the server under it, and shows the
// session manager reporting Suspended and then Reconnected to the same
// session. Run it with `make demo`.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/integration"
	"github.com/zkrecipes/zkrecipes/session"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run() error {
	say("starting a local ZooKeeper ...")
	z, err := integration.LaunchZK(1)
	if err != nil {
		return err
	}
	defer z.Close()
	member := z.Members()[0]
	say("ZooKeeper serving at %s", member.Addr())

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client, err := session.Connect(ctx, z.Servers(),
		session.WithSessionTimeout(20*time.Second),
		session.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))))
	if err != nil {
		return err
	}
	defer client.Close()
	states, err := client.Subscribe(ctx)
	if err != nil {
		return err
	}
	s, err := client.Session(ctx)
	if err != nil {
		return err
	}
	node, err := client.Create(ctx, "/demo/worker-", []byte("alive"), zk.FlagEphemeral|zk.FlagSequence)
	if err != nil {
		return err
	}
	say("connected: session 0x%x holds ephemeral node %s", s.ID(), node)

	say("stopping the server ...")
	if err := member.StopErr(); err != nil {
		return err
	}
	if err := await(ctx, states, session.Suspended); err != nil {
		return err
	}
	say("the old session value is done: %v", s.Err())
	say("starting the server again ...")
	if err := member.StartErr(); err != nil {
		return err
	}
	if err := await(ctx, states, session.Reconnected); err != nil {
		return err
	}
	s2, err := client.Session(ctx)
	if err != nil {
		return err
	}
	ok, _, err := client.Exists(ctx, node)
	if err != nil {
		return err
	}
	say("reconnected: session 0x%x (same session: %v), %s still exists: %v", s2.ID(), s2.ID() == s.ID(), node, ok)
	return nil
}

func await(ctx context.Context, states <-chan session.StateChange, want session.State) error {
	for {
		select {
		case ch := <-states:
			say("state: %s (session 0x%x)", ch.State, ch.SessionID)
			if ch.State == want {
				return nil
			}
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", want, ctx.Err())
		}
	}
}

func say(format string, args ...any) {
	fmt.Printf("%s  %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}
