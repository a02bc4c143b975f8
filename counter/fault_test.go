package counter_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/counter"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/session"
)

// A connection cut while a write is out: the write is applied once or not
// at all, and the call says ErrOutcomeUnknown; it is never tried again
// behind the caller's back (a retry of a versioned write that did apply
// fails on the version, and a counter that took that for another
// writer's would report not applied, or apply an increment twice). Two
// cuts: right after the whole write reached the server (applied, its
// reply lost), and one byte before (never applied).
//
// The cut counts bytes, so a request of the client's own (a ping, a round
// of proof) sent between the read and the write moves it earlier: the
// write is then not applied, which the checks accept. The reply-lost case
// runs until one try saw the write applied (a few at most: the client is
// let prove its session first, and its pings come every 10 s).
func TestCutWhileWriteIsOut(t *testing.T) {
	ops := []struct {
		name string
		do   func(t *testing.T, l *counter.Long) (counter.Result[int64], error)
	}{
		{"CompareAndSet", func(t *testing.T, l *counter.Long) (counter.Result[int64], error) {
			return l.CompareAndSet(ctxT(t), 10, 11)
		}},
		{"Increment", func(t *testing.T, l *counter.Long) (counter.Result[int64], error) {
			return l.Increment(ctxT(t))
		}},
	}
	const tries = 5
	for _, o := range ops {
		t.Run(o.name+"/reply lost", func(t *testing.T) {
			for i := range tries {
				if cutWrite(t, fmt.Sprint(i), o.do, 0) {
					return
				}
			}
			t.Fatalf("in %d tries, the write never reached the server before the cut", tries)
		})
		t.Run(o.name+"/request lost", func(t *testing.T) {
			require.False(t, cutWrite(t, "0", o.do, -1), "applied, one byte short")
		})
	}
}

// cutWrite runs do on a counter at 10 through a proxy that cuts the
// connection once the read and the write (less short bytes) went through,
// checks that the call said ErrOutcomeUnknown with Result {10, 11} and that
// the counter then reads 10 or 11, and reports whether it was applied.
func cutWrite(t *testing.T, name string, do func(*testing.T, *counter.Long) (counter.Result[int64], error), short int64) bool {
	t.Helper()
	servers := sharedServers(t)
	p := harness.NewProxy(t, servers[0])
	c := zktest.Connect(t, []string{p.Addr()}, session.WithSessionTimeout(30*time.Second))
	path := pathOf(t, "n-"+name)
	l, err := counter.NewLong(c, path)
	require.NoError(t, err)
	check, err := counter.NewLong(zktest.Connect(t, servers), path)
	require.NoError(t, err)
	require.NoError(t, check.Set(ctxT(t), 10))
	zktest.AwaitProven(t, c)
	_, err = l.Get(ctxT(t))
	require.NoError(t, err)

	p.ResetAfter(t, getSize(path)+setSize(path, 8)+short)
	done := make(chan error, 1)
	var r counter.Result[int64]
	go func() {
		var err error
		r, err = do(t, l)
		done <- err
	}()
	select {
	case err = <-done:
	case <-time.After(waitLimit):
		t.Fatalf("no return within %v", waitLimit)
	}
	p.Restore(t)
	require.ErrorIs(t, err, counter.ErrOutcomeUnknown, "%v", err)
	require.Equal(t, counter.Result[int64]{Pre: 10, Post: 11}, r)

	// A write of the same session on its new connection: the server
	// handles it after whatever it read of the old one.
	barrier, err := counter.NewLong(c, pathOf(t, "barrier"))
	require.NoError(t, err)
	require.NoError(t, barrier.Set(ctxT(t), 1))
	n, err := check.Get(ctxT(t))
	require.NoError(t, err)
	require.Contains(t, []int64{10, 11}, n, "applied once or not at all")
	return n == 11
}

// getSize and setSize are the sizes on the wire, length prefix included,
// of the getData and setData requests session.Client sends for path
// (without a namespace).
func getSize(path string) int64 { return 4 + 4 + 4 + 4 + int64(len(path)) + 1 } // header, path, watch

func setSize(path string, data int) int64 {
	return 4 + 4 + 4 + 4 + int64(len(path)) + 4 + int64(data) + 4 // header, path, data, version
}
