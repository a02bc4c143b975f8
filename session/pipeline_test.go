package session_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/session"
)

// received is how many requests the server has read from session sid's
// connection, and the last one's operation (the four-letter word cons).
func received(t *testing.T, server string, sid int64) (int, string) {
	t.Helper()
	out, err := harness.FourLetterWord(server, "cons")
	require.NoError(t, err)
	line := regexp.MustCompile(fmt.Sprintf(`.*sid=0x%x\b.*`, sid)).FindString(out)
	require.NotEmpty(t, line, "no connection of session 0x%x in cons:\n%s", sid, out)
	m := regexp.MustCompile(`recved=(\d+)`).FindStringSubmatch(line)
	n, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	lop := regexp.MustCompile(`lop=(\w+)`).FindStringSubmatch(line)
	if lop == nil {
		return n, ""
	}
	return n, lop[1]
}

// CreateAndList sends the listing right behind the create, before the
// create's reply comes back: with the server's replies held back, the
// server reads both requests; the listing then holds the new node (the
// server ran them in order).
func TestCreateAndListPipelines(t *testing.T) {
	server := zktest.Shared(t)[0]
	p := harness.NewProxy(t, server)
	c := connect(t, []string{p.Addr()}, session.WithSessionTimeout(60*time.Second)) // no ping meanwhile
	ctx := ctxT(t)
	const parent = "/pipeline"
	require.NoError(t, c.EnsurePath(ctx, parent))
	sess, err := c.Session(ctx)
	require.NoError(t, err)
	// The connection's first round of proof (a sync, then a multi) done:
	// its multi going out after the listing would be the last op the
	// server reports, and the next round is an interval away.
	require.Eventually(t, func() bool { return session.ProofIdle(c) }, waitLimit, 10*time.Millisecond)
	before, _ := received(t, server, sess.ID())

	p.HoldToClient(t) // the server hears us; we hear nothing
	type result struct {
		node string
		kids []string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		node, _, kids, err := c.CreateAndList(context.Background(), parent+"/n-", nil, session.Ephemeral|session.PersistentSequential, parent)
		done <- result{node, kids, err}
	}()
	var lop string
	require.Eventually(t, func() bool {
		var n int
		n, lop = received(t, server, sess.ID())
		return n >= before+2 && (lop == "GETC" || lop == "GET2") // the create, then the listing
	}, waitLimit, 10*time.Millisecond, "the listing did not go out before the create's reply came back (last op %s)", lop)
	select {
	case <-done:
		t.Fatal("CreateAndList returned while the replies were held")
	default:
	}
	p.Restore(t)
	r := <-done
	require.NoError(t, r.err)
	assert.Contains(t, r.kids, session.BaseName(r.node), "the listing was taken after the create")
}
