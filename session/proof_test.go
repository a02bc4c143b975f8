package session

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestKindOf(t *testing.T) {
	for op, want := range map[int32]requestKind{
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
	const p = 100 * time.Millisecond
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
			{kindLocal, 0, 5, true}, {kindForwarded, 105, 110, true}, {kindQuorum, 111, 120, true}}, 0},
		{"F less than a period after R's reply", []req{
			{kindLocal, 0, 5, true}, {kindForwarded, 104, 110, true}, {kindQuorum, 111, 120, true}}, -1},
		{"Q sent before F's reply", []req{
			{kindLocal, 0, 5, true}, {kindForwarded, 105, 0, true}, {kindQuorum, 106, 0, true}}, -1},
		{"F failed", []req{
			{kindLocal, 0, 5, true}, {kindForwarded, 105, 110, false}, {kindQuorum, 111, 120, true}}, -1},
		{"Q failed (a member may answer an error alone)", []req{
			{kindLocal, 0, 5, true}, {kindForwarded, 105, 110, true}, {kindQuorum, 111, 120, false}}, -1},
		{"a read is no F", []req{
			{kindLocal, 0, 5, true}, {kindLocal, 105, 110, true}, {kindQuorum, 111, 120, true}}, -1},
		{"a sync is no Q", []req{
			{kindLocal, 0, 5, true}, {kindForwarded, 105, 110, true}, {kindForwarded, 111, 120, true}}, -1},
		{"a failed R is no R", []req{
			{kindLocal, 0, 5, false}, {kindForwarded, 105, 110, true}, {kindQuorum, 111, 120, true}}, -1},
		{"writes chained a period apart: each proves the one two before", []req{
			{kindQuorum, 0, 5, true}, {kindQuorum, 105, 110, true}, {kindQuorum, 210, 215, true}}, 0},
		{"the latest R a period before F counts", []req{
			{kindLocal, 0, 5, true}, {kindLocal, 20, 25, true}, {kindLocal, 90, 95, true},
			{kindForwarded, 125, 130, true}, {kindQuorum, 131, 140, true}}, 20},
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
	assert.GreaterOrEqual(t, tags.cand, 9*p-p/slots, "at most a slot older than the best")
	assert.LessOrEqual(t, tags.cand, 9*p)
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
		time.Sleep(l.period() + 5*time.Millisecond) // a period after the last write's reply
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

	// A write whose reply is an error proves nothing.
	time.Sleep(l.period() + 5*time.Millisecond)
	c.out.feed(request(5, opCodeSync))
	c.in.feed(reply(5, 0))
	c.out.feed(request(6, opCodeMulti))
	c.in.feed(reply(6, -101))
	_, again, _ := l.lastHeard(sid)
	assert.Equal(t, proven, again)

	// A replaced connection's replies prove nothing.
	time.Sleep(l.period() + 5*time.Millisecond)
	c.out.feed(request(7, opCodeSync))
	c.in.feed(reply(7, 0))
	c.out.feed(request(8, opCodeMulti))
	newTracked(&l)
	c.in.feed(reply(8, 0))
	_, again, _ = l.lastHeard(sid)
	assert.Equal(t, proven, again)
}

// The watchdog's schedule (proofDue) with the proof rule, simulated on a
// millisecond clock: whatever the client's own writes (none, or one every
// spacing), the session is proven at most about two periods behind (the
// default policy drops a member that cannot prove within three), and a
// client whose own writes come often sends no rounds.
func TestProofScheduleKeepsUp(t *testing.T) {
	const p, rtt = 500 * time.Millisecond, 5 * time.Millisecond
	for _, spacing := range []time.Duration{0, p / 10, p / 2, p * 9 / 10, p * 99 / 100, p * 3 / 2, 3 * p} {
		lag, rounds := simulateProofs(p, rtt, spacing, 200*p)
		t.Logf("writes every %v: proven at most %.2f periods behind, %.2f rounds a period", spacing, float64(lag)/float64(p), float64(rounds)/200)
		assert.LessOrEqual(t, lag, 2*p+10*rtt, "writes every %v", spacing)
		if spacing > 0 && spacing <= p/10 {
			assert.Zero(t, rounds, "writes every %v prove the session by themselves", spacing)
		}
	}
}

// simulateProofs runs a client for span with a write every spacing (none
// when 0) and the watchdog's rounds (a sync, then a write after its
// reply), each request answered rtt after it is sent; it returns how far
// behind the proof ran at most after a warm-up, and how many rounds ran.
func simulateProofs(p, rtt, spacing, span time.Duration) (maxLag time.Duration, rounds int) {
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
		nextWrite         = spacing
	)
	pr.note(0, 0, p) // the handshake
	for now := time.Duration(0); now < span; now += time.Millisecond {
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
		if !roundOut && now >= proofDue(proven, lastRound, p) {
			roundOut = true
			rounds++
			send(kindForwarded, func(at time.Duration) {
				out = append(out, inflight{pr.send(kindQuorum, at, p), at, at + rtt, func(at time.Duration) {
					roundOut, lastRound = false, at
				}})
			})
		}
		if now > 20*p {
			maxLag = max(maxLag, now-proven)
		}
	}
	return maxLag, rounds
}
