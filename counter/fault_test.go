package counter_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/counter"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/session"
)

// A connection cut while a write is out: the write is applied once and
// reported ErrOutcomeUnknown, or not applied and reported so; it is never
// tried again behind the caller's back (a retry of a versioned write that
// did apply fails on the version, and a counter that took that for
// another writer's would report not applied, or apply an increment
// twice). Two cuts: after the server applied the write and before its
// reply reached the client (held by the proxy), and before the request
// reached the server.
func TestCutWhileWriteIsOut(t *testing.T) {
	type op struct {
		name string
		do   func(l *counter.Long) (counter.Result[int64], error)
	}
	ops := []op{
		{"CompareAndSet", func(l *counter.Long) (counter.Result[int64], error) {
			return l.CompareAndSet(ctxT(t), 10, 11)
		}},
		{"Increment", func(l *counter.Long) (counter.Result[int64], error) { return l.Increment(ctxT(t)) }},
	}
	for _, o := range ops {
		for _, reached := range []bool{true, false} {
			name := o.name + "/reply lost"
			if !reached {
				name = o.name + "/request lost"
			}
			t.Run(name, func(t *testing.T) {
				servers := sharedServers(t)
				p := harness.NewProxy(t, servers[0])
				// Pings are rare (a 30s session): none comes between the read and the write.
				c := zktest.Connect(t, []string{p.Addr()}, session.WithSessionTimeout(30*time.Second))
				reader := zktest.Connect(t, servers)
				path := pathOf(t, "n")
				l, err := counter.NewLong(c, path)
				require.NoError(t, err)
				check, err := counter.NewLong(reader, path)
				require.NoError(t, err)
				require.NoError(t, check.Set(ctxT(t), 10))
				_, err = l.Get(ctxT(t)) // connected, the read done
				require.NoError(t, err)

				// The read goes through; the connection closes once the
				// whole write reached the server (applied, reply lost), or
				// one byte short of it (never applied).
				budget := getSize(path) + setSize(path, 8)
				if !reached {
					budget--
				}
				p.ResetAfter(t, budget)
				type result struct {
					r   counter.Result[int64]
					err error
				}
				done := make(chan result, 1)
				go func() {
					r, err := o.do(l)
					done <- result{r, err}
				}()
				var res result
				select {
				case res = <-done:
					p.Restore(t)
				case <-time.After(waitLimit):
					t.Fatalf("%s did not return within %v", o.name, waitLimit)
				}
				require.ErrorIs(t, res.err, counter.ErrOutcomeUnknown, "%v", res.err)
				assert.Equal(t, counter.Result[int64]{Pre: 10, Post: 11}, res.r)
				if reached {
					// The client saw the cut before the server may have
					// applied the write: wait for it, then for nothing more.
					awaitValue(t, check, 11)
				}
				n, err := check.Get(ctxT(t))
				require.NoError(t, err)
				if reached {
					assert.Equal(t, int64(11), n, "applied once")
				} else {
					assert.Equal(t, int64(10), n, "not applied")
				}
			})
		}
	}
}

// getSize and setSize are the sizes on the wire, length prefix included,
// of the getData and setData requests session.Client sends for path
// (without a namespace).
func getSize(path string) int64 { return 4 + 4 + 4 + 4 + int64(len(path)) + 1 } // header, path, watch

func setSize(path string, data int) int64 {
	return 4 + 4 + 4 + 4 + int64(len(path)) + 4 + int64(data) + 4 // header, path, data, version
}

// awaitValue waits until l reads want, within waitLimit.
func awaitValue(t *testing.T, l *counter.Long, want int64) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		n, err := l.Get(ctxT(t))
		require.NoError(t, err)
		if n == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the counter reads %d, not %d, after %v", n, want, waitLimit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
