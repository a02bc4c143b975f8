package refusal

import (
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/recipes"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// sqlState is a driver's error with a SQLSTATE, as pgx's *PgError.
type sqlState struct{ code, msg string }

func (e *sqlState) Error() string    { return e.msg + " (SQLSTATE " + e.code + ")" }
func (e *sqlState) SQLState() string { return e.code }

// redisReply is a Redis error reply, as go-redis's.
type redisReply string

func (e redisReply) Error() string { return string(e) }
func (redisReply) RedisError()     {}

// mysqlErr is go-sql-driver/mysql's *MySQLError, as it writes itself.
type mysqlErr struct {
	number int
	state  string
}

func (e *mysqlErr) Error() string {
	return fmt.Sprintf("Error %d (%s): refused", e.number, e.state)
}

// The servers' refusals, as their clients report them, and answers that
// look alike and are not.
func TestServerRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want Reason
	}{
		{"postgres wrong password", &sqlState{"28P01", "password authentication failed"}, Auth},
		{"postgres pg_hba.conf", &sqlState{"28000", "no pg_hba.conf entry"}, Auth},
		{"postgres insufficient privilege", &sqlState{"42501", "permission denied for table"}, Permission},
		{"postgres missing table", &sqlState{"42P01", "relation does not exist"}, NotRefused},
		{"postgres too many connections", &sqlState{"53300", "too many clients"}, NotRefused},
		{"mysql access denied", &mysqlErr{1045, "28000"}, Auth},
		{"mysql no password", &mysqlErr{1698, "28000"}, Auth},
		{"mysql database refused", &mysqlErr{1044, "42000"}, Permission},
		{"mysql table refused", &mysqlErr{1142, "42000"}, Permission},
		{"mysql routine refused", &mysqlErr{1370, "42000"}, Permission},
		{"mysql user's connection limit", &mysqlErr{1203, "42000"}, NotRefused},
		{"mysql missing table", &mysqlErr{1146, "42S02"}, NotRefused},
		{"redis wrong password", redisReply("WRONGPASS invalid username-password pair or user is disabled."), Auth},
		{"redis no password", redisReply("NOAUTH Authentication required."), Auth},
		{"redis password to a server with none", redisReply("ERR AUTH <password> called without any password configured for the default user."), Auth},
		{"redis password to an old server with none", redisReply("ERR Client sent AUTH, but no password is set"), Auth},
		{"redis ACL", redisReply("NOPERM this user has no permissions to run the 'evalsha' command"), Permission},
		{"redis ACL in a script", redisReply("ERR The user executing the script can't run this command or subcommand script: ..."), Permission},
		{"redis loading", redisReply("LOADING Redis is loading the dataset in memory"), NotRefused},
		{"redis unknown command", redisReply("ERR unknown command 'x'"), NotRefused},
		{"redis text that is no reply", errors.New("NOAUTH in a message of the client's own"), NotRefused},
		{"memcached unauthenticated", errors.New(`memcache: unexpected response line from "add": "CLIENT_ERROR unauthenticated\r\n"`), Auth},
		{"memcached authentication failure", errors.New("memcached authentication refused: CLIENT_ERROR authentication failure"), Auth},
		{"memcached incr unauthenticated", errors.New("memcache: client error: unauthenticated"), Auth},
		{"memcached bad data", errors.New(`memcache: unexpected response line: "CLIENT_ERROR bad data chunk\r\n"`), NotRefused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, err := range []error{
				tc.err,
				fmt.Errorf("acquire: %w", tc.err),
				&net.OpError{Op: "dial", Net: "tcp", Err: tc.err},
				errors.Join(errors.New("another server"), tc.err),
				hiding{tc.err},
			} {
				got, cause := Of(err)
				assert.Equal(t, tc.want, got, "%v", err)
				marked := Mark(err)
				assert.Equal(t, tc.want != NotRefused, errors.Is(marked, recipes.ErrRefused), "%v", marked)
				if tc.want == NotRefused {
					assert.Nil(t, cause)
					assert.Equal(t, err, marked, "left as it is")
					continue
				}
				assert.Equal(t, tc.err.Error(), cause.Error(), "the cause is the server's answer")
				assert.Equal(t, err.Error(), marked.Error())
				assert.Same(t, marked, Mark(marked), "marked once")
			}
		})
	}
}

// As marks what the rule cannot name (a client's own sentinel); a mark
// keeps its reason, and the cause is the server's answer under it.
func TestAs(t *testing.T) {
	noAuth := errors.New("zk: not authenticated")
	assert.False(t, Is(noAuth))
	err := fmt.Errorf("session: create /x: %w", As(noAuth, Auth))
	assert.ErrorIs(t, err, recipes.ErrRefused)
	assert.ErrorIs(t, err, noAuth)
	got, cause := Of(err)
	assert.Equal(t, Auth, got)
	assert.Equal(t, noAuth, cause)
	assert.NoError(t, As(nil, Auth))
	assert.Equal(t, noAuth, As(noAuth, NotRefused))

	reply := redisReply("NOPERM no")
	got, cause = Of(As(fmt.Errorf("wrapped: %w", reply), Auth))
	assert.Equal(t, Auth, got, "the mark's reason")
	assert.Equal(t, error(reply), cause, "the server's answer")

	for r := NotRefused; r <= NotTLS; r++ {
		assert.NotEmpty(t, r.String())
		assert.Equal(t, r >= Untrusted, r.TLS(), "%v", r)
	}
}
