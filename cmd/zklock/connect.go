package main

import (
	"context"
	"fmt"
	"sync"

	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// connect opens a session client as the flags say: with the credentials
// of --auth-file, the ACL of --acl (the run; ls creates nothing) and TLS
// when a --tls flag is given. Connect gives up when ctx ends or after
// session.DefaultConnectionTimeout, and at once when a whole round of
// attempts, every address of every server, has failed the TLS handshake
// (a certificate not trusted is not mended by waiting: see tlsRefusals);
// a bad server address is a session.ErrInvalidArgument error.
func connect(ctx context.Context, o connOptions, rep *reporter) (*session.Client, error) {
	servers, err := o.serverList()
	if err != nil {
		return nil, err
	}
	opts := []session.Option{
		session.WithSessionTimeout(o.sessionTimeout),
		session.WithLogger(rep.logger()),
	}
	if o.namespace != "" {
		opts = append(opts, session.WithNamespace(o.namespace))
	}
	for _, c := range o.creds {
		opts = append(opts, session.WithDigestAuth(c.user, c.password))
	}
	if o.acl != "" {
		opts = append(opts, session.WithACL(aclFor(o.acl)))
	}
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if o.tls.given() {
		refused := newTLSRefusals(len(servers), cancel)
		opts = append(opts, session.WithTLS(o.tls.config()),
			session.WithTrace(&recipes.Trace{Connect: refused.note}))
	}
	c, err := session.Connect(cctx, servers, opts...)
	if cause := context.Cause(cctx); err != nil && cause != nil && ctx.Err() == nil {
		return nil, fmt.Errorf("%w: %w", err, cause) // every server failed TLS
	}
	return c, err
}

// tlsRefusals ends the connection wait once every attempt of a whole
// round since the last connection made has failed the TLS handshake. The
// session resolves each server of the list into all its addresses (a name
// may have several: localhost is 127.0.0.1 and ::1, an ensemble's name
// its members) and tries each once before it tries one again; the Connect
// trace names the address, and how many there are is not known here. So
// the round is over when an address that failed TLS fails TLS again. An
// attempt that failed otherwise (a server down, which may come back and
// accept) keeps the wait going until the connection timeout. Two servers
// of the list may resolve to one address ("localhost:2281,
// 127.0.0.1:2281"), which the session tries once for each: the round is
// taken to have at least as many attempts as the list has servers. (A
// list that names an address twice, once by a name with other addresses
// too, may still end the wait before those were tried.) It is the
// session's Connect hook: it must not block.
type tlsRefusals struct {
	mu       sync.Mutex
	servers  int             // in the list: the least number of addresses in a round
	attempts int             // since the last connection made
	allTLS   bool            // every attempt since then failed TLS
	refused  map[string]bool // the addresses that failed TLS since then
	cancel   context.CancelCauseFunc
}

func newTLSRefusals(servers int, cancel context.CancelCauseFunc) *tlsRefusals {
	return &tlsRefusals{servers: servers, allTLS: true, refused: map[string]bool{}, cancel: cancel}
}

func (t *tlsRefusals) note(ci recipes.ConnectInfo) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if ci.Err == nil {
		t.attempts, t.allTLS = 0, true
		clear(t.refused)
		return
	}
	t.attempts++
	if what, _, ok := refusal(ci.Err); !ok || !refusedTLS(what) {
		t.allTLS = false // a server down, say: it may come back
		return
	}
	again := t.refused[ci.Server]
	t.refused[ci.Server] = true
	if t.allTLS && again && t.attempts > t.servers {
		t.cancel(fmt.Errorf("%s: %w", ci.Server, ci.Err))
	}
}
