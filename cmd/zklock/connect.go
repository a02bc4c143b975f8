package main

import (
	"context"

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
