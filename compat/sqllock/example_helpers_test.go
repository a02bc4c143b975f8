package sqllock_test

import "github.com/zkrecipes/zkrecipes/internal/testkit/harness"

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
