package compatbench

import (
	"context"
	"maps"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
)

// resp encodes a command as a client sends it.
func resp(args ...string) string {
	s := "*" + strconv.Itoa(len(args)) + "\r\n"
	for _, a := range args {
		s += "$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n"
	}
	return s
}

func TestParserCountsCommandsWhateverTheChunks(t *testing.T) {
	stream := resp("HELLO", "3") + resp("client", "setinfo", "LIB-NAME", "go-redis") +
		resp("SET", "k", "v\r\n*2\r\n", "NX", "PX", "10000") + // a value that looks like RESP
		"PING\r\n" + // inline
		resp("evalsha", "0123456789abcdef0123456789abcdef01234567", "1", "k", "id") +
		resp("SUBSCRIBE", "{l}:granted") + resp("SET", "big", string(make([]byte, 70000)))
	want := map[string]int64{"HELLO": 1, "CLIENT|SETINFO": 1, "SET": 2, "PING": 1, "EVALSHA": 1, "SUBSCRIBE": 1}
	for _, chunk := range []int{1, 2, 3, 7, 64, 1 << 20} {
		c := NewCounter()
		p := parser{c: c}
		for i := 0; i < len(stream); i += chunk {
			p.feed([]byte(stream[i:min(i+chunk, len(stream))]))
		}
		got := c.Snapshot()
		if got.Total != 7 || !maps.Equal(got.ByName, want) || got.Broken != 0 {
			t.Errorf("chunks of %d: %+v, want 7 commands %v", chunk, got, want)
		}
	}
}

func TestParserStopsAtWhatIsNotRESP(t *testing.T) {
	c := NewCounter()
	p := parser{c: c}
	p.feed([]byte(resp("GET", "k") + "*1\r\n:5\r\n" + resp("GET", "k")))
	got := c.Snapshot()
	if got.Total != 1 || got.Broken == 0 {
		t.Errorf("%+v, want 1 command and the rest not parsed", got)
	}
}

func TestCountsSubAdd(t *testing.T) {
	a := Counts{Total: 5, ByName: map[string]int64{"GET": 3, "SET": 2}}
	b := Counts{Total: 2, ByName: map[string]int64{"GET": 2}}
	d := a.Sub(b)
	if d.Total != 3 || !maps.Equal(d.ByName, map[string]int64{"GET": 1, "SET": 2}) {
		t.Errorf("Sub: %+v", d)
	}
	if s := d.Add(b); s.Total != 5 || !maps.Equal(s.ByName, a.ByName) {
		t.Errorf("Add: %+v", s)
	}
}

func TestParseCommandStats(t *testing.T) {
	c, err := parseCommandStats("# Commandstats\r\ncmdstat_evalsha:calls=12,usec=80,usec_per_call=6.67,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_client|setinfo:calls=2,usec=1\r\ncmdstat_info:calls=9,usec=5\r\n")
	if err != nil {
		t.Fatal(err)
	}
	if c.Total != 23 || !maps.Equal(c.ByName, map[string]int64{"EVALSHA": 12, "CLIENT|SETINFO": 2, "INFO": 9}) {
		t.Errorf("%+v", c)
	}
}

// On a real server, what the counter saw sent agrees with what Redis
// executed: a plain SET and GET are two commands both ways.
func TestCounterAgreesWithRedis(t *testing.T) {
	r := harness.StartRedis(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := redis.NewClient(&redis.Options{Addr: r.Addr()})
	defer func() { _ = admin.Close() }()
	ctr := NewCounter()
	rdb := goRedis(r.Addr(), ctr)
	defer func() { _ = rdb.Close() }()
	if err := rdb.Ping(ctx).Err(); err != nil { // the handshake
		t.Fatal(err)
	}
	s0 := ctr.Snapshot()
	e0, err := CommandStats(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.Get(ctx, "k").Err(); err != nil {
			t.Fatal(err)
		}
	}
	e1, err := CommandStats(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	sent, exec := ctr.Snapshot().Sub(s0), Executed(e0, e1, 1)
	want := map[string]int64{"SET": 100, "GET": 100}
	if !maps.Equal(sent.ByName, want) || !maps.Equal(exec.ByName, want) {
		t.Errorf("sent %v, executed %v, want %v both", sent.ByName, exec.ByName, want)
	}
}
