package harness

import (
	"io"
	"testing"
	"time"
)

// Latency delays every chunk from the time it was read, as a pipeline: many
// small writes cost the latency about once, not once each.
func TestProxyLatencyPipelines(t *testing.T) {
	ln := listenUpstream(t)
	p := NewProxy(t, ln.Addr().String())
	c, s := proxiedPair(t, p, ln)
	const d, n = 200 * time.Millisecond, 20
	p.Latency(t, d)

	start := time.Now()
	wrote := make(chan error, 1)
	go func() {
		for i := range n {
			if _, err := c.Write([]byte{byte(i)}); err != nil {
				wrote <- err
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		wrote <- nil
	}()
	s.SetReadDeadline(time.Now().Add(10 * time.Second))
	got := make([]byte, n)
	if _, err := io.ReadFull(s, got[:1]); err != nil {
		t.Fatal(err)
	}
	if e := time.Since(start); e < d {
		t.Fatalf("first byte after %v with latency %v", e, d)
	}
	if _, err := io.ReadFull(s, got[1:]); err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	for i, b := range got {
		if int(b) != i {
			t.Fatalf("bytes out of order: %v", got)
		}
	}
	// One chunk per d would take n*d = 4s; a pipeline about d + n*5ms.
	if elapsed >= n*d/2 {
		t.Fatalf("%d writes 5ms apart took %v through latency %v: not pipelined", n, elapsed, d)
	}
	t.Logf("%d writes 5ms apart through latency %v: %v", n, d, elapsed.Round(time.Millisecond))

	// The way back is delayed too, and Restore lets what is delayed go at once.
	p.Latency(t, time.Hour)
	send(t, s, "late")
	send(t, c, "later")
	expectNothing(t, c)
	expectNothing(t, s)
	p.Restore(t)
	expectRead(t, c, "late")
	expectRead(t, s, "later")
}

// LatencyToClient and LatencyToServer delay one way only: what goes the other
// way overtakes what is delayed.
func TestProxyLatencyOneWay(t *testing.T) {
	ln := listenUpstream(t)
	p := NewProxy(t, ln.Addr().String())
	c, s := proxiedPair(t, p, ln)
	const d = time.Second

	p.LatencyToClient(t, d)
	start := time.Now()
	send(t, s, "A")
	send(t, c, "B")
	expectRead(t, s, "B")
	expectNothingYet(t, c)
	expectRead(t, c, "A")
	if e := time.Since(start); e < d {
		t.Fatalf("A after %v with latency %v toward the client", e, d)
	}

	p.Restore(t)
	p.LatencyToServer(t, d)
	start = time.Now()
	send(t, c, "C")
	send(t, s, "D")
	expectRead(t, c, "D")
	expectNothingYet(t, s)
	expectRead(t, s, "C")
	if e := time.Since(start); e < d {
		t.Fatalf("C after %v with latency %v toward the server", e, d)
	}
}
