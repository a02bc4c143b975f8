package sqllock

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
)

// pgError is an error with a SQLSTATE, as pgx's and lib/pq's are.
type pgError string

func (e pgError) Error() string    { return "ERROR: something (SQLSTATE " + string(e) + ")" }
func (e pgError) SQLState() string { return string(e) }

// Errors that trying again cannot mend end Acquire (and a renewal) at
// once; the others are retried.
func TestPermanent(t *testing.T) {
	for _, tc := range []struct {
		err       error
		permanent bool
	}{
		{pgError("42P01"), true},  // undefined_table
		{pgError("42883"), true},  // undefined_function
		{pgError("42501"), true},  // insufficient_privilege
		{pgError("28P01"), true},  // invalid_password
		{pgError("57P01"), false}, // admin_shutdown: a restart
		{pgError("40001"), false}, // serialization_failure
		{pgError("53300"), false}, // too_many_connections
		{errors.New("Error 1146 (42S02): Table 'zkr.zkrecipes_locks' doesn't exist"), true},
		{errors.New("Error 1045 (28000): Access denied for user 'x'@'localhost'"), true},
		{errors.New("Error 1142 (42000): UPDATE command denied to user"), true},
		{errors.New("Error 1203 (42000): User x already has more than 'max_user_connections' active connections"), false},
		{errors.New("Error 1461 (42000): Can't create more than max_prepared_stmt_count statements"), false},
		{errors.New("Error 1213 (40001): Deadlock found when trying to get lock"), false},
		{fmt.Errorf("acquire x: %w", errors.New("sql: expected 7 arguments, got 6")), true},
		{errors.New("sql: database is closed"), true},
		{sql.ErrConnDone, true},
		{errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), false},
		{context.DeadlineExceeded, false},
	} {
		got := permanent(tc.err)
		assert.Equal(t, tc.permanent, errors.Is(got, ttl.ErrPermanent), "%v", tc.err)
		assert.ErrorIs(t, got, tc.err)
	}
	assert.NoError(t, permanent(nil))
	assert.Equal(t, sql.ErrNoRows, permanent(sql.ErrNoRows))
}
