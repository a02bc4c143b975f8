package main

import (
	"context"

	"github.com/zkrecipes/zkrecipes/session"
)

// connect opens a session client as the flags say. Connect gives up when
// ctx ends or after session.DefaultConnectionTimeout; a bad server address
// is a session.ErrInvalidArgument error.
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
	return session.Connect(ctx, servers, opts...)
}
