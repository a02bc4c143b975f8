package sqllock

import (
	"context"
	"crypto/x509"
	"database/sql"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// pgError is an error with a SQLSTATE, as pgx's and lib/pq's are.
type pgError string

func (e pgError) Error() string    { return "ERROR: something (SQLSTATE " + string(e) + ")" }
func (e pgError) SQLState() string { return string(e) }

// Errors that trying again cannot mend end Acquire (and a renewal) at
// once; a new connection refused (credentials, a certificate) ends
// Acquire at once but a renewal tries again (the pool may hold
// connections made before a rotation); the others are retried. Refusals
// (credentials, permissions, certificates) are recipes.ErrRefused.
func TestPermanent(t *testing.T) {
	const (
		transient = iota
		refused   // ends an acquisition, a renewal tries again
		forGood   // ends both
	)
	for _, tc := range []struct {
		err     error
		kind    int
		refusal bool // errors.Is(recipes.ErrRefused)
	}{
		{pgError("42P01"), forGood, false},   // undefined_table
		{pgError("42883"), forGood, false},   // undefined_function
		{pgError("42501"), forGood, true},    // insufficient_privilege
		{pgError("28P01"), refused, true},    // invalid_password
		{pgError("28000"), refused, true},    // invalid_authorization_specification
		{pgError("57P01"), transient, false}, // admin_shutdown: a restart
		{pgError("40001"), transient, false}, // serialization_failure
		{pgError("53300"), transient, false}, // too_many_connections
		{errors.New("Error 1146 (42S02): Table 'zkr.zkrecipes_locks' doesn't exist"), forGood, false},
		{errors.New("Error 1045 (28000): Access denied for user 'x'@'localhost'"), refused, true},
		{errors.New("Error 1698 (28000): Access denied for user 'x'@'localhost'"), refused, true},
		{errors.New("Error 1142 (42000): UPDATE command denied to user"), forGood, true},
		{errors.New("Error 1203 (42000): User x already has more than 'max_user_connections' active connections"), transient, false},
		{errors.New("Error 1461 (42000): Can't create more than max_prepared_stmt_count statements"), transient, false},
		{errors.New("Error 1213 (40001): Deadlock found when trying to get lock"), transient, false},
		{fmt.Errorf("acquire x: %w", errors.New("sql: expected 7 arguments, got 6")), forGood, false},
		{errors.New("sql: database is closed"), forGood, false},
		{sql.ErrConnDone, forGood, false},
		{fmt.Errorf("failed to connect: %w", x509.UnknownAuthorityError{}), refused, true},
		{fmt.Errorf("tls: %w", x509.HostnameError{Certificate: &x509.Certificate{}, Host: "db"}), refused, true},
		{errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), transient, false},
		{context.DeadlineExceeded, transient, false},
	} {
		got := permanent(tc.err)
		assert.Equal(t, tc.kind != transient, errors.Is(got, ttl.ErrPermanent), "%v", tc.err)
		assert.Equal(t, tc.kind == forGood, ttl.EndsRenewal(got), "%v ends a renewal", tc.err)
		assert.ErrorIs(t, got, tc.err)
		assert.Equal(t, tc.refusal, errors.Is(got, recipes.ErrRefused), "%v is a refusal", tc.err)
		assert.Equal(t, tc.err.Error(), got.Error(), "the text is the server's")
	}
	assert.NoError(t, permanent(nil))
	assert.Equal(t, sql.ErrNoRows, permanent(sql.ErrNoRows))
}
