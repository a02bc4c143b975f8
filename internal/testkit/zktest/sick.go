package zktest

import (
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/session"
)

// SickTimeout is the session timeout of a client beside a sick member: its
// handshake's bound is a third of it.
const SickTimeout = 6 * time.Second

// BesideSick is a client given two servers: a member that accepts and never
// answers (Mute), then a healthy server behind Proxy. After a connection to
// one of two addresses the client tries the other first, so every
// reconnection after Switch passes the sick member.
type BesideSick struct {
	Client *session.Client
	Proxy  *harness.Proxy
	Mute   *harness.Mute
	States <-chan session.StateChange
}

// ConnectBesideSick connects such a client to server.
func ConnectBesideSick(t testing.TB, server string, opts ...session.Option) *BesideSick {
	t.Helper()
	mute := harness.NewMute(t)
	p := harness.NewProxy(t, server)
	opts = append([]session.Option{session.WithSessionTimeout(SickTimeout)}, opts...)
	c := Connect(t, []string{mute.Addr(), p.Addr()}, opts...)
	states, err := c.Subscribe(Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	return &BesideSick{Client: c, Proxy: p, Mute: mute, States: states}
}

// Switch cuts the client's connection, waits for Suspended, restores the
// proxy and waits for the reconnection, which must keep the session and
// must have tried the sick member first.
func (b *BesideSick) Switch(t testing.TB) {
	t.Helper()
	id := b.Client.CurrentSession().ID()
	before := b.Mute.Accepted()
	b.Proxy.Cut(t)
	b.await(t, session.Suspended)
	b.Proxy.Restore(t)
	got := b.await(t, session.Reconnected)
	if got.SessionID != id {
		t.Fatalf("the session changed across the switch: %#x, then %#x", id, got.SessionID)
	}
	if b.Mute.Accepted() == before {
		t.Fatal("the reconnection did not try the sick member")
	}
}

// await reads state changes until want, failing on Lost or after WaitLimit.
func (b *BesideSick) await(t testing.TB, want session.State) session.StateChange {
	t.Helper()
	timeout := time.After(WaitLimit)
	for {
		select {
		case ch, ok := <-b.States:
			switch {
			case !ok:
				t.Fatalf("state channel closed before %v", want)
			case ch.State == session.Lost:
				t.Fatalf("the session was lost beside a sick member (waiting for %v)", want)
			case ch.State == want:
				return ch
			}
		case <-timeout:
			t.Fatalf("no %v within %v", want, WaitLimit)
		}
	}
}
