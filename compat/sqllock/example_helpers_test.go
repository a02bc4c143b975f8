package sqllock_test

import (
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
)

// examplePostgres starts a PostgreSQL for one example and returns its DSN,
// and the stop that the example defers (the package's TestMain checks for
// leaks and cannot stop what examples start). In your code the DSN is
// your database's. It panics when no server can be had.
func examplePostgres() (dsn string, stop func()) {
	s, stop := harness.ForExample(harness.StartPostgres)
	return s.DSN(), stop
}

// exampleMariaDB is examplePostgres for MariaDB.
func exampleMariaDB() (dsn string, stop func()) {
	s, stop := harness.ForExample(harness.StartMariaDB)
	return s.DSN(), stop
}

// examplePostgresPassword is examplePostgres for a server that asks for a
// password: its DSN (without the password) and the password.
func examplePostgresPassword() (dsn, password string, stop func()) {
	s, stop := harness.ForExample(func(t testing.TB) *harness.Postgres {
		return harness.StartPostgresSecure(t, "example-password")
	})
	return s.DSN(), s.Password(), stop
}
