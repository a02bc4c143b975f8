package session

import (
	"crypto/x509"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// A round of refusals: every address of the list (each with the host it
// is named by) refused since the last connection, with no other failure
// between; Connect is told once it is complete, with each refusal.
func TestRefusalsRound(t *testing.T) {
	refused := func(server string) *attemptError {
		return &attemptError{server, fmt.Errorf("tls handshake: %w", x509.UnknownAuthorityError{}), failedTLS}
	}
	down := func(server string) *attemptError {
		return &attemptError{server, errors.New("connect: connection refused"), failedDial}
	}
	type attempt struct {
		addr, host string
		e          *attemptError
	}
	for _, tc := range []struct {
		name     string
		servers  int
		attempts []attempt
		want     []string // the servers of the round told, in order; nil: none told
	}{
		{"one server", 1, []attempt{{"a", "a", refused("a")}}, []string{"a"}},
		{"two servers", 2, []attempt{{"a", "a", refused("a")}, {"a", "a", refused("a")}, {"b", "b", refused("b")}}, []string{"a", "b"}},
		{"one down between", 2, []attempt{{"a", "a", refused("a")}, {"b", "b", down("b")}, {"a", "a", refused("a")}}, nil},
		{"one down, then refusing: a new round", 2, []attempt{{"a", "a", refused("a")}, {"b", "b", down("b")}, {"b", "b", refused("b")}}, nil},
		{"a round after one down", 2, []attempt{{"b", "b", down("b")}, {"a", "a", refused("a")}, {"b", "b", refused("b")}}, []string{"a", "b"}},
		{"one address named twice", 2, []attempt{{"a", "localhost", refused("a")}, {"a", "a", refused("a")}}, []string{"a", "a"}},
		{"one address refused twice", 2, []attempt{{"a", "a", refused("a")}, {"a", "a", refused("a")}}, nil},
		{"before resolution", 0, []attempt{{"a", "a", refused("a")}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r refusals
			var told []error
			r.waitFor(func(err error) { told = append(told, err) })
			for _, a := range tc.attempts {
				r.note(a.addr, a.host, a.e, tc.servers)
			}
			if tc.want == nil {
				assert.Empty(t, told)
				return
			}
			require.Len(t, told, 1)
			var round *refusedRound
			require.ErrorAs(t, told[0], &round)
			var servers []string
			for _, a := range round.attempts {
				servers = append(servers, a.server)
			}
			assert.Equal(t, tc.want, servers)
			assert.ErrorIs(t, told[0], recipes.ErrRefused)
			var unknown x509.UnknownAuthorityError
			assert.ErrorAs(t, told[0], &unknown, "the refusals' own errors")
		})
	}

	// A connection forgets the refusals; with no one waiting, none is told.
	var r refusals
	var told int
	r.waitFor(func(error) { told++ })
	r.note("a", "a", refused("a"), 2)
	r.reset()
	r.note("b", "b", refused("b"), 2)
	assert.Zero(t, told, "a connection between")
	r.waitFor(nil)
	r.note("a", "a", refused("a"), 2)
	assert.Zero(t, told, "no one waits")
}
