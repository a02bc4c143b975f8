package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/zkrecipes/zkrecipes/session"
)

// connect opens a session client as the flags say: with the credentials
// of --auth-file, the ACL of --acl (the run; ls and watch create nothing) and TLS
// when a --tls flag is given. Connect gives up when ctx ends or after
// session.DefaultConnectionTimeout, and at once when every server refused
// zklock in one round of attempts (a certificate not trusted is not
// mended by waiting: session.Connect's error is then recipes.ErrRefused);
// a bad server address is a session.ErrInvalidArgument error. The extra
// options come last (watch's connection timeout).
func connect(ctx context.Context, o connOptions, rep *reporter, extra ...session.Option) (*session.Client, error) {
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
	if o.tls.given() {
		opts = append(opts, session.WithTLS(o.tls.config()))
	}
	return session.Connect(ctx, servers, append(opts, extra...)...)
}

// connectOneShot connects a one-shot subcommand (ls, services) as its
// flags say, with a reporter of its output flags. On failure it has
// reported why (a bad --servers is a usage error, an unreachable or
// refusing server exit 69) and returns a nil client and the exit status.
func connectOneShot(ctx context.Context, sub string, conn *connOptions, out outputOptions, stderr io.Writer, opts ...session.Option) (*session.Client, *reporter, int) {
	rep := newReporter(stderr, out)
	rep.secrets = longestFirst(conn.secrets())
	client, err := connect(ctx, *conn, rep, opts...)
	if errors.Is(err, session.ErrInvalidArgument) {
		return nil, rep, usageError(stderr, "%s: invalid --servers: %s", sub, invalidReason(err))
	}
	if err != nil {
		rep.errorf("%s: %s", sub, zkFailure(conn, err, fmt.Sprintf("cannot connect to ZooKeeper at %s: %v", conn.servers, err)))
		return nil, rep, exitUnavailable
	}
	return client, rep, exitOK
}
