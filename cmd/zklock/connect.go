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
// session.DefaultConnectionTimeout, and at once when every server has
// failed the TLS handshake (a certificate not trusted is not mended by
// waiting); a bad server address is a session.ErrInvalidArgument error.
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
		refused := &tlsRefusals{servers: len(servers), refused: map[string]bool{}, cancel: cancel}
		opts = append(opts, session.WithTLS(o.tls.config()),
			session.WithTrace(&recipes.Trace{Connect: refused.note}))
	}
	c, err := session.Connect(cctx, servers, opts...)
	if cause := context.Cause(cctx); err != nil && cause != nil && ctx.Err() == nil {
		return nil, fmt.Errorf("%w: %w", err, cause) // every server failed TLS
	}
	return c, err
}

// tlsRefusals ends the connection wait once every server has failed the
// TLS handshake since the last connection made. It is the session's
// Connect hook: it must not block.
type tlsRefusals struct {
	mu      sync.Mutex
	servers int
	refused map[string]bool // the addresses that failed the handshake
	cancel  context.CancelCauseFunc
}

func (t *tlsRefusals) note(ci recipes.ConnectInfo) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if ci.Err == nil {
		clear(t.refused)
		return
	}
	if what, _, ok := refusal(ci.Err); !ok || !refusedTLS(what) {
		return // a server down, say: it may come back
	}
	t.refused[ci.Server] = true
	if len(t.refused) >= t.servers {
		t.cancel(fmt.Errorf("%s: %w", ci.Server, ci.Err))
	}
}
