package session

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestKindOf(t *testing.T) {
	for op, want := range map[int32]requestKind{
		100: kindUntouched, 102: kindUntouched,
		3: kindLocal, 4: kindLocal, 8: kindLocal, 11: kindLocal, 12: kindLocal, 101: kindLocal, 22: kindLocal, // reads, ping, setWatches, multiRead
		opCodeSync:   kindForwarded,
		opCodeCreate: kindQuorum, opCodeDelete: kindQuorum, opCodeSetData: kindQuorum, opCodeSetACL: kindQuorum,
		opCodeCheck: kindQuorum, opCodeMulti: kindQuorum, opCodeCreate2: kindQuorum, opCodeCreateContainer: kindQuorum,
		opCodeDeleteContainer: kindQuorum, opCodeCreateTTL: kindQuorum, opCodeReconfig: kindQuorum,
	} {
		assert.Equal(t, want, kindOf(op), "opcode %d", op)
	}
}

// The rule of proof.go on its own: R answered, F forwarded a period after
// R's reply and answered, Q a write sent after F's reply and answered
// without error proves R's send time; each condition is needed.
func TestProofRule(t *testing.T) {
	const p = 96 * time.Millisecond // lean(p) = 102ms
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	type req struct {
		kind       requestKind
		sent, repl int  // ms; sends and replies are fed in time order
		ok         bool // the reply has no error
	}
	for _, tc := range []struct {
		name   string
		reqs   []req
		proven int // ms; -1: nothing proven
	}{
		{"R, F a period later, Q after F's reply", []req{
			{kindLocal, 0, 5, true}, {kindForwarded, 107, 110, true}, {kindQuorum, 111, 120, true}}, 0},
		{"F less than a period (and its sixteenth) after R's reply", []req{
			{kindLocal, 0, 5, true}, {kindForwarded, 106, 110, true}, {kindQuorum, 111, 120, true}}, -1},
		{"Q sent before F's reply", []req{
			{kindLocal, 0, 5, true}, {kindForwarded, 107, 0, true}, {kindQuorum, 108, 0, true}}, -1},
		{"F failed", []req{
			{kindLocal, 0, 5, true}, {kindForwarded, 107, 110, false}, {kindQuorum, 111, 120, true}}, -1},
		{"Q failed (a member may answer an error alone)", []req{
			{kindLocal, 0, 5, true}, {kindForwarded, 107, 110, true}, {kindQuorum, 111, 120, false}}, -1},
		{"a read is no F", []req{
			{kindLocal, 0, 5, true}, {kindLocal, 107, 110, true}, {kindQuorum, 111, 120, true}}, -1},
		{"a sync is no Q", []req{
			{kindLocal, 0, 5, true}, {kindForwarded, 107, 110, true}, {kindForwarded, 111, 120, true}}, -1},
		{"a failed R is no R", []req{
			{kindLocal, 0, 5, false}, {kindForwarded, 107, 110, true}, {kindQuorum, 111, 120, true}}, -1},
		{"an auth is no R (the server answers it untouched)", []req{
			{kindUntouched, 0, 5, true}, {kindForwarded, 107, 110, true}, {kindQuorum, 111, 120, true}}, -1},
		{"writes chained a period apart: each proves the one two before", []req{
			{kindQuorum, 0, 5, true}, {kindQuorum, 107, 112, true}, {kindQuorum, 214, 219, true}}, 0},
		{"the latest R a period before F counts", []req{
			{kindLocal, 0, 5, true}, {kindLocal, 20, 25, true}, {kindLocal, 90, 95, true},
			{kindForwarded, 128, 130, true}, {kindQuorum, 131, 140, true}}, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var pr proof
			proven := -1
			type out struct {
				req
				tags proofTags
			}
			var inflight []out
			// Events in time order: a send at its time, a reply at its.
			for now := 0; now <= 300; now++ {
				for i := 0; i < len(inflight); i++ {
					if o := inflight[i]; o.repl == now {
						if at, ok := pr.reply(o.tags, ms(o.sent), ms(now), p, o.ok); ok {
							proven = max(proven, int(at/time.Millisecond))
						}
						inflight = append(inflight[:i], inflight[i+1:]...)
						i--
					}
				}
				for _, r := range tc.reqs {
					if r.sent == now {
						inflight = append(inflight, out{r, pr.send(r.kind, ms(now), p)})
					}
				}
			}
			assert.Equal(t, tc.proven, proven)
		})
	}
}

// The candidates are bounded: two per slot, and of those a period old only
// the latest; a send leans on one at most a slot older than the best.
func TestProofKeepsFewCandidates(t *testing.T) {
	const p = 80 * time.Millisecond
	var pr proof
	for now := time.Duration(0); now < 10*p; now += time.Millisecond {
		pr.note(now, now, p)
		require.LessOrEqual(t, len(pr.answered), 2*slots+4)
	}
	tags := pr.send(kindForwarded, 10*p, p)
	require.True(t, tags.candOK)
	best := 10*p - lean(p)
	assert.GreaterOrEqual(t, tags.cand, best-p/slots, "at most a slot older than the best")
	assert.LessOrEqual(t, tags.cand, best)
}

// Through the connection wrapper, on the wire's frames: the watchdog's
// round (a sync, then a check-only multi) proves the previous round's
// write; a reply on a replaced connection proves nothing.
func TestProofOnTheWire(t *testing.T) {
	l := liveness{requested: 400 * time.Millisecond} // period 100ms
	c := newTracked(&l)
	const sid = 0x77
	c.out.feed(jute(nil).i32(0).i64(0).i32(400).i64(0).str("").frame())
	c.in.feed(connectResp(400, sid))
	_, handshake, ok := l.lastHeard(sid)
	require.True(t, ok)

	round := func(x int32) {
		time.Sleep(lean(l.period()) + 5*time.Millisecond) // a period after the last write's reply
		c.out.feed(request(x, opCodeSync))
		c.in.feed(reply(x, 0))
		c.out.feed(request(x+1, opCodeMulti))
		c.in.feed(reply(x+1, 0))
	}
	round(1)
	_, proven, _ := l.lastHeard(sid)
	assert.Equal(t, handshake, proven, "the first round proves the handshake again")
	before := mono()
	round(3)
	_, proven, _ = l.lastHeard(sid)
	assert.Greater(t, proven, handshake, "the second round proves the first round's write")
	assert.Less(t, proven, before)

	// A multi whose header says no error but whose first result is one
	// (it met an expired session, say) proves nothing.
	time.Sleep(lean(l.period()) + 5*time.Millisecond)
	c.out.feed(request(9, opCodeSync))
	c.in.feed(reply(9, 0))
	c.out.feed(request(10, opCodeMulti))
	c.in.feed(jute(nil).i32(10).i64(0x100000002).i32(0).i32(-1).flag(true).i32(-112).frame())
	_, again, _ := l.lastHeard(sid)
	assert.Equal(t, proven, again, "a failed multi")

	// A write whose reply is an error proves nothing.
	time.Sleep(lean(l.period()) + 5*time.Millisecond)
	c.out.feed(request(5, opCodeSync))
	c.in.feed(reply(5, 0))
	c.out.feed(request(6, opCodeMulti))
	c.in.feed(reply(6, -101))
	_, again, _ = l.lastHeard(sid)
	assert.Equal(t, proven, again)

	// A replaced connection's replies prove nothing.
	time.Sleep(lean(l.period()) + 5*time.Millisecond)
	c.out.feed(request(7, opCodeSync))
	c.in.feed(reply(7, 0))
	c.out.feed(request(8, opCodeMulti))
	newTracked(&l)
	c.in.feed(reply(8, 0))
	_, again, _ = l.lastHeard(sid)
	assert.Equal(t, proven, again)
}

// The watchdog's schedule (proofDue) with the proof rule, simulated on a
// millisecond clock from a connection's handshake: whatever the client's
// own writes (none, or one every spacing), the session is proven at most
// about two intervals (a quarter of t, or a period if longer) behind (the
// default policy drops a member that cannot prove within 3/4 t), at most
// four rounds run per session timeout, and a client whose own writes come
// often sends no rounds.
func TestProofScheduleKeepsUp(t *testing.T) {
	const timeout = 2 * time.Second
	for _, c := range []struct{ p, rtt time.Duration }{
		{timeout / 4, 5 * time.Millisecond}, {timeout / 20, 5 * time.Millisecond}, {timeout / 4, timeout / 50},
	} {
		p, rtt := c.p, c.rtt
		worst := 2*max(lean(p), timeout/4) + 10*rtt
		require.Less(t, worst, unprovenAfter(timeout), "the drop leaves room")
		for _, spacing := range []time.Duration{0, p / 10, p / 2, p * 9 / 10, p * 99 / 100, p * 3 / 2, 3 * p} {
			lag, rounds := simulateProofs(p, timeout, rtt, spacing, 50*timeout)
			t.Logf("period %v, answered after %v, writes every %v: proven at most %.2f t behind, %.2f rounds a session timeout",
				p, rtt, spacing, float64(lag)/float64(timeout), float64(rounds)/50)
			assert.LessOrEqual(t, lag, worst, "period %v, answered after %v, writes every %v", p, rtt, spacing)
			assert.LessOrEqual(t, rounds, 50*4+1, "period %v: at most four rounds a session timeout", p)
			if spacing > 0 && spacing <= timeout/40 {
				assert.LessOrEqual(t, rounds, 2, "writes every %v prove the session by themselves, but for the connection's first two rounds", spacing)
			}
		}
	}
}

// simulateProofs runs a connection for span from its handshake, with a
// write every spacing (none when 0) and the watchdog's rounds (a sync,
// then a write after its reply; the connection's first at once), each
// request answered rtt after it is sent; it returns how far behind the
// proof ran at most, and how many rounds ran.
func simulateProofs(p, timeout, rtt, spacing, span time.Duration) (maxLag time.Duration, rounds int) {
	type inflight struct {
		tags        proofTags
		sent, reply time.Duration
		then        func(at time.Duration)
	}
	var (
		pr                proof
		out               []inflight
		proven, lastRound time.Duration
		roundOut          bool
		roundsBegun       int
		nextWrite         = spacing
	)
	pr.note(0, rtt, p) // the handshake, sent at 0
	for now := rtt; now < span; now += time.Millisecond {
		send := func(k requestKind, then func(time.Duration)) {
			out = append(out, inflight{pr.send(k, now, p), now, now + rtt, then})
		}
		for i := 0; i < len(out); i++ {
			if r := out[i]; r.reply <= now {
				out = append(out[:i], out[i+1:]...)
				i--
				if at, ok := pr.reply(r.tags, r.sent, now, p, true); ok {
					proven = max(proven, at)
				}
				if r.then != nil {
					r.then(now)
				}
			}
		}
		if spacing > 0 && now >= nextWrite {
			send(kindQuorum, nil)
			nextWrite += spacing
		}
		if !roundOut && (roundsBegun == 0 || now >= proofDue(proven, lastRound, p, timeout, roundsBegun < 2)) {
			roundOut = true
			roundsBegun++
			rounds++
			send(kindForwarded, func(at time.Duration) {
				out = append(out, inflight{pr.send(kindQuorum, at, p), at, at + rtt, func(at time.Duration) {
					roundOut, lastRound = false, at
				}})
			})
		}
		maxLag = max(maxLag, now-proven)
	}
	return maxLag, rounds
}
