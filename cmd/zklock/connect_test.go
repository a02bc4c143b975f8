package main

import (
	"context"
	"crypto/x509"
	"errors"
	"net"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// The connection wait ends early only once a whole round of attempts
// (every address the session resolved the servers into, tried once each)
// has failed TLS: an address failing TLS again closes the round. The
// rule is not told how many addresses there are.
func TestTLSRefusals(t *testing.T) {
	const (
		a1, a2, a3 = "10.0.0.1:2281", "10.0.0.2:2281", "10.0.0.3:2281"
		v4, v6     = "127.0.0.1:2281", "[::1]:2281"
	)
	untrusted := x509.UnknownAuthorityError{}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	tlsFail := func(addr string) recipes.ConnectInfo { return recipes.ConnectInfo{Server: addr, Err: untrusted} }
	down := func(addr string) recipes.ConnectInfo { return recipes.ConnectInfo{Server: addr, Err: refused} }
	connected := func(addr string) recipes.ConnectInfo { return recipes.ConnectInfo{Server: addr} }
	for _, tc := range []struct {
		name     string
		servers  int // in --servers
		attempts []recipes.ConnectInfo
		endsAt   int // the attempt (from 1) that ends the wait; 0: none does
	}{
		{"one address", 1, []recipes.ConnectInfo{tlsFail(a1), tlsFail(a1)}, 2},
		{"one name, three members: not at the first failure", 1,
			[]recipes.ConnectInfo{tlsFail(a1), tlsFail(a2), tlsFail(a3), tlsFail(a1)}, 4},
		{"one name, three members, the last accepts", 1,
			[]recipes.ConnectInfo{tlsFail(a1), tlsFail(a2), connected(a3)}, 0},
		{"localhost: 127.0.0.1 refuses the certificate, ::1 accepts", 1,
			[]recipes.ConnectInfo{tlsFail(v4), connected(v6)}, 0},
		{"a member down may come back", 1,
			[]recipes.ConnectInfo{tlsFail(a1), down(a2), tlsFail(a3), tlsFail(a1), down(a2), tlsFail(a3)}, 0},
		{"a connection starts a new round", 1,
			[]recipes.ConnectInfo{tlsFail(a1), tlsFail(a2), connected(a3), tlsFail(a1), tlsFail(a2), tlsFail(a3), tlsFail(a1)}, 7},
		{"a connection forgets a member that was down", 1,
			[]recipes.ConnectInfo{down(a1), tlsFail(a2), connected(a2), tlsFail(a1), tlsFail(a2), tlsFail(a1)}, 6},
		{"two servers of the list, one address", 2,
			[]recipes.ConnectInfo{tlsFail(v4), tlsFail(v4), tlsFail(v4)}, 3},
		{"localhost and 127.0.0.1: ::1 is tried", 2,
			[]recipes.ConnectInfo{tlsFail(v4), tlsFail(v4), connected(v6)}, 0},
	} {
		ctx, cancel := context.WithCancelCause(context.Background())
		r := newTLSRefusals(tc.servers, cancel)
		ended := 0
		for i, ci := range tc.attempts {
			r.note(ci)
			if ended == 0 && ctx.Err() != nil {
				ended = i + 1
			}
		}
		assert.Equal(t, tc.endsAt, ended, tc.name)
		if tc.endsAt > 0 {
			cause := context.Cause(ctx)
			assert.ErrorIs(t, cause, untrusted, tc.name)
			assert.Contains(t, cause.Error(), tc.attempts[tc.endsAt-1].Server, "%s: names the address", tc.name)
		}
		cancel(errors.New("done"))
	}
}
