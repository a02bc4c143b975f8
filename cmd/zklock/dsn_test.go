package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMaskDSN(t *testing.T) {
	for _, tc := range []struct{ dsn, want string }{
		// URLs (pgx; lib/pq).
		{"postgres://user:secret@db.example.com:5432/app?sslmode=require", "postgres://user:xxxxx@db.example.com:5432/app?sslmode=require"},
		{"postgresql://user:p%40ss@h/db", "postgresql://user:xxxxx@h/db"},
		{"postgres://user:pa@ss:w@h1:5432,h2:5432/db", "postgres://user:xxxxx@h1:5432,h2:5432/db"},
		{"postgres://user@h:5432/db", "postgres://user@h:5432/db"},
		{"postgres://h:5432/db", "postgres://h:5432/db"},
		{"postgres://user:@h/db", "postgres://user:@h/db"},
		{"postgres://user@h/db?sslmode=disable&password=secret&x=1", "postgres://user@h/db?sslmode=disable&password=xxxxx&x=1"},
		{"postgres://user:secret@h/db?password=other", "postgres://user:xxxxx@h/db?password=xxxxx"},
		// PostgreSQL keyword/value strings.
		{"host=h user=u password=secret dbname=d", "host=h user=u password=xxxxx dbname=d"},
		{"password=secret host=h", "password=xxxxx host=h"},
		{"host=h password = 'se cr\\'et' dbname=d", "host=h password = xxxxx dbname=d"},
		{"host=h PASSWORD=secret", "host=h PASSWORD=xxxxx"},
		{"host=h password='unterminated", "host=h password=xxxxx"},
		{"host=h user=u dbname=d", "host=h user=u dbname=d"},
		// go-sql-driver/mysql DSNs.
		{"user:secret@tcp(127.0.0.1:3306)/db?parseTime=true", "user:xxxxx@tcp(127.0.0.1:3306)/db?parseTime=true"},
		{"user:se:c@r/et@tcp(h:1)/db", "user:xxxxx@tcp(h:1)/db"},
		{"user:secret@unix(/run/mysqld/mysqld.sock)/db", "user:xxxxx@unix(/run/mysqld/mysqld.sock)/db"},
		{"user:secret@/db", "user:xxxxx@/db"},
		{"user:secret@tcp(h:1)", "user:xxxxx@tcp(h:1)"},
		{"root@tcp(127.0.0.1:3306)/zkr", "root@tcp(127.0.0.1:3306)/zkr"},
		{"tcp(h:1)/db", "tcp(h:1)/db"},
		{"/db", "/db"},
		{"", ""},
	} {
		assert.Equal(t, tc.want, maskDSN(tc.dsn), "%q", tc.dsn)
	}
}

// The reporter masks the passwords of the DSNs given wherever they appear,
// as written and as the driver reads them.
func TestSecretsMasked(t *testing.T) {
	b := backendOptions{name: backendPostgres, dsn: "postgres://u:p%40ss@h/db", listenDSN: "host=h password='o th\\'er'"}
	assert.ElementsMatch(t, []string{"p%40ss", "p@ss", "'o th\\'er'", "o th'er"}, b.secrets())
	var out lockedBuffer
	rep := newReporter(&out, outputOptions{})
	rep.secrets = b.secrets()
	rep.errorf("bad %s, %s, %s", "p@ss", "p%40ss", "o th'er")
	assert.Equal(t, "zklock: bad xxxxx, xxxxx, xxxxx\n", out.String())

	b = backendOptions{name: backendMySQL, dsn: "u:s@cr:et@tcp(h:1)/db"}
	assert.Equal(t, []string{"s@cr:et"}, b.secrets())
	assert.Empty(t, (&backendOptions{name: backendMySQL, dsn: "u@tcp(h:1)/db"}).secrets())
}
