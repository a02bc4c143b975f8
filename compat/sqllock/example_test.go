package sqllock_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/zkrecipes/zkrecipes/compat/sqllock"
	"github.com/zkrecipes/zkrecipes/compat/sqllock/pgxlistener"
	"github.com/zkrecipes/zkrecipes/recipes"
)

func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn, stop := examplePostgres() // your database
	defer stop()

	db, err := sql.Open("pgx", dsn) // github.com/jackc/pgx/v5/stdlib
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	// Waiters hear of releases through LISTEN on a connection of their own
	// (compat/sqllock/pgxlistener: only its importers link pgx).
	listener, err := pgxlistener.Parse(dsn)
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := sqllock.NewClient(db, sqllock.PostgreSQL, sqllock.WithListener(listener))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	if err := c.CreateTable(ctx); err != nil { // or apply c.DDL() with your migrations
		fmt.Println(err)
		return
	}
	l, err := sqllock.New(c, "example-orders", sqllock.WithTTL(10*time.Second)) // no I/O yet
	if err != nil {
		fmt.Println(err)
		return
	}
	lease, err := l.Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	// Work with lease.Context(): it is cancelled before the database can
	// let the lock go (renewals failed, the network went silent), and
	// fence writes with the token.
	work := lease.Context()
	_, ok := lease.Token()
	fmt.Println("fencing token:", ok)
	fmt.Println(lease.Release(ctx))
	fmt.Println("lease ended:", context.Cause(work))
	// Output:
	// fencing token: true
	// <nil>
	// lease ended: recipes: lease released
}

// On MySQL or MariaDB: no listener (waiters wait in GET_LOCK). TryAcquire
// fails at once while the lock is held; a waiter in Acquire gets it when
// it is released, with a higher token.
func ExampleLock_TryAcquire() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn, stop := exampleMariaDB()
	defer stop()

	db, err := sql.Open("mysql", dsn) // github.com/go-sql-driver/mysql
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	c, err := sqllock.NewClient(db, sqllock.MySQL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	if err := c.CreateTable(ctx); err != nil {
		fmt.Println(err)
		return
	}
	mine, _ := sqllock.New(c, "example-report")
	theirs, _ := sqllock.New(c, "example-report") // another process's, in real life
	lease, err := mine.Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = theirs.TryAcquire(ctx)
	fmt.Println("held:", errors.Is(err, recipes.ErrLocked))

	next := make(chan recipes.Lease)
	go func() {
		l, err := theirs.Acquire(ctx)
		if err != nil {
			fmt.Println(err)
		}
		next <- l
	}()
	first, _ := lease.Token()
	fmt.Println(lease.Release(ctx))
	got := <-next
	if got == nil {
		return
	}
	second, _ := got.Token()
	fmt.Println("higher token:", second > first)
	fmt.Println(got.Release(ctx))
	// Output:
	// held: true
	// <nil>
	// higher token: true
	// <nil>
}

// A server that asks for a password (and TLS, if the DSN's sslmode says
// so): keep the password out of the DSN, out of the command line and out
// of logs by giving it to the driver's configuration (here from a secret
// store; PGPASSWORD or a ~/.pgpass file work as well, as with psql). The
// lock takes the *sql.DB and the listener as they are: it needs nothing
// more of the connection.
func Example_password() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn, password, stop := examplePostgresPassword() // your DSN, without the password; your secret
	defer stop()

	cfg, err := pgx.ParseConfig(dsn) // TLS: sslmode=verify-full&sslrootcert=ca.pem in the DSN
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg.Password = password
	db := stdlib.OpenDB(*cfg) // github.com/jackc/pgx/v5/stdlib
	defer db.Close()
	listener, err := pgxlistener.New(cfg.Copy())
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := sqllock.NewClient(db, sqllock.PostgreSQL, sqllock.WithListener(listener))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	if err := c.CreateTable(ctx); err != nil {
		fmt.Println(err)
		return
	}
	l, err := sqllock.New(c, "example-password")
	if err != nil {
		fmt.Println(err)
		return
	}
	lease, err := l.Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("held")
	fmt.Println(lease.Release(ctx))
	// Output:
	// held
	// <nil>
}
