package session

import "time"

// A proof that the ensemble's leader heard the session.
//
// A reply proves that the member which sent it heard the request, not that
// the leader did, and the leader is who expires sessions. A follower or an
// observer cut off from the rest of the ensemble goes on answering its
// clients (pings included) from its own state for up to syncLimit ×
// tickTime (10 s with ZooKeeper's defaults), while the leader, which no
// longer hears of those sessions, expires them one session timeout after
// the cut. So the client trusts its session only as far as it can prove
// the leader heard it. What ZooKeeper 3.8 does, from its source:
//
//  1. Every request a member reads from a client, pings included, touches
//     the session in the member's touch table before it is processed.
//  2. The leader pings each follower and observer every tickTime/2; the
//     member answers each ping with its touch table (and empties it), and
//     the leader applies those touches: the session cannot expire there
//     before one session timeout after that.
//  3. Forwarded requests (sync, and every write) travel to the leader on
//     the member's one connection to it, and the leader's answers (a sync's
//     reply, a write's commit) come back on that connection, in order with
//     its pings. A member that loses that connection closes all its client
//     connections: an unbroken client connection means one leader
//     connection throughout.
//  4. A write is committed only through a quorum, so a leader that commits
//     it leads the ensemble (a sync alone does not show that: a deposed
//     leader answers it by itself for up to syncLimit ticks).
//  5. A client's requests on one connection are answered in order.
//
// Hence, on one unbroken connection: let R be a request answered at r_R,
// F a forwarded request (a sync or a write) sent at least one leader ping
// period P after r_R and answered, and Q a write sent after F's reply and
// answered without error. R touched the member before r_R (1). The leader
// received F at least P after that touch, so it had sent a ping in
// between, before F's answer (2); the member read that ping before F's
// answer, and answered it, with R's touch, before it forwarded Q (3). The
// leader read the touch before Q, and committed Q through a quorum (4):
// a leader of the ensemble applied R's touch, and the session expires no
// sooner than one session timeout after R's send time. The proof is of
// the session, not of the connection: a later leader, elected afresh,
// gives every session a whole timeout from its election.
//
// A connect handshake proves itself: a new session is created through a
// quorum, and a member that reconnects a session asks the leader to
// revalidate it, which touches it there, before it answers.
//
// P is bounded by what the negotiated session timeout t says of tickTime:
// ZooKeeper clamps t to [minSessionTimeout, maxSessionTimeout], by default
// [2, 20] × tickTime, so tickTime ≤ t/2 and P = tickTime/2 ≤ t/4. Servers
// whose minSessionTimeout is below 2 × tickTime break that bound:
// WithServerTick gives the client their tickTime instead. F is sent a
// sixteenth of P later than P (lean): the leader's ping thread waits
// tickTime/2, then takes a lock and checks its quorum before it pings. A
// reply's first result is read too: a multi that met an expired session
// answers err 0 in its header. Auth and SASL replies, which the server
// sends without touching the session, are no R.
//
// Holes that remain, as in ZooKeeper itself: local sessions (off by
// default); observers that follow an ObserverMaster (two hops); members
// whose tickTimes differ (P bounds the leader's from the member's
// minSessionTimeout); a touch lost in the microsecond race between a
// request and a ping's snapshot of the touch table (the touch of the
// request before it then counts); a leader whose ping thread runs late by
// more than the slack; and a reconnection answered by a deposed leader
// before it notices it has lost its quorum, which by default can overlap
// the majority's new leader by up to about two seconds.
//
// The client proves continuously (liveness.go): with no write of its own
// to lean on, a round of one sync and one write (a multi of a single check
// of "/" at any version, which changes nothing but uses a zxid) at once on
// each new connection, then every interval of max(lean(P), t/4), each
// round proving the send time of the previous round's write: at most four
// syncs and four writes per session timeout, and none while the client's
// own writes keep the proof younger than an interval and a half. A
// healthy session is proven at most about two intervals (t/2) plus five
// round trips behind; the default policy drops a member that cannot prove
// within 3/4 t, so a round (a sync and a write) slower than about t/20 is
// read as a member cut off. What it costs an ensemble: an idle client
// uses about 3.7 zxids per session timeout (a fleet of 2,000 idle clients
// at t = 6 s, about 1,200 writes a second, exhausts the 32-bit zxid
// counter of an epoch in about 40 days, which makes ZooKeeper elect a
// leader again; and it snapshots more often).

// Opcodes of the requests that the leader sees (ZooKeeper's OpCode).
const (
	opCodeAuth            = 100 // answered at once, without a touch
	opCodeSASL            = 102 // likewise
	opCodeDelete          = 2
	opCodeSetData         = 5
	opCodeSetACL          = 7
	opCodeSync            = 9
	opCodeCreate2         = 15
	opCodeReconfig        = 16
	opCodeCreateContainer = 19
	opCodeDeleteContainer = 20
	opCodeCreateTTL       = 21
)

// requestKind is what the reply to a request shows of the leader.
type requestKind uint8

const (
	// kindUntouched: the member answers it without touching the session
	// (auth, SASL): no R.
	kindUntouched requestKind = iota
	// kindLocal: the member answers by itself (reads, pings).
	kindLocal
	// kindForwarded: answered once the leader's answer came back (sync).
	kindForwarded
	// kindQuorum: forwarded, and committed through a quorum (writes).
	kindQuorum
)

// kindOf is the kind of a request with opcode op.
func kindOf(op int32) requestKind {
	switch op {
	case opCodeAuth, opCodeSASL:
		return kindUntouched
	case opCodeSync:
		return kindForwarded
	case opCodeCreate, opCodeDelete, opCodeSetData, opCodeSetACL, opCodeCheck, opCodeMulti,
		opCodeCreate2, opCodeReconfig, opCodeCreateContainer, opCodeDeleteContainer, opCodeCreateTTL:
		return kindQuorum
	}
	return kindLocal
}

// proof is one connection's way to a proof, in the terms above: the
// requests answered lately (the candidates for R), and the latest send
// time that a write sent from now on proves (armed: the best R of a
// forwarded request answered since). Times are mono(). It is not safe for
// concurrent use.
type proof struct {
	answered []answeredAt // oldest first; two at most per slot of period/slots
	armed    time.Duration
	armedOK  bool
}

// answeredAt is one answered request: its send and reply times.
type answeredAt struct{ sent, replied time.Duration }

// lean is how long after R's reply a forwarded request must be sent to
// lean on R: the ping period bound, and a sixteenth more for a leader
// whose ping thread runs a little late (it waits tickTime/2, then takes a
// lock and checks its quorum before it pings).
func lean(period time.Duration) time.Duration { return period + period/16 }

// slots is how finely the answered requests are kept within a period
// (see note): a forwarded request may lean on an R up to a slot older than
// the best, never a newer one.
const slots = 8

// proofTags is what a request carries from its send to its reply.
type proofTags struct {
	kind   requestKind
	cand   time.Duration // forwarded or quorum: the R its reply arms
	candOK bool
	arm    time.Duration // quorum: the R its reply proves
	armOK  bool
}

// send is called as a request of kind goes out at now, with period the
// leader's ping period bound P.
func (p *proof) send(kind requestKind, now, period time.Duration) proofTags {
	tags := proofTags{kind: kind}
	if kind <= kindLocal {
		return tags
	}
	for i := len(p.answered) - 1; i >= 0; i-- {
		if a := p.answered[i]; a.replied <= now-lean(period) {
			tags.cand, tags.candOK = a.sent, true
			break
		}
	}
	if kind == kindQuorum {
		tags.arm, tags.armOK = p.armed, p.armedOK
	}
	return tags
}

// reply is called as the reply to a request that carried tags and was sent
// at sent comes in at now; ok when it reports no error (an error may come
// from the member alone, and a multi that failed may have met an expired
// session). It returns the send time this reply proves the leader heard,
// if any.
func (p *proof) reply(tags proofTags, sent, now, period time.Duration, ok bool) (proven time.Duration, provenOK bool) {
	if !ok || tags.kind == kindUntouched {
		return 0, false
	}
	p.note(sent, now, period)
	if tags.candOK && tags.kind > kindLocal && (!p.armedOK || tags.cand > p.armed) {
		p.armed, p.armedOK = tags.cand, true
	}
	if tags.armOK && tags.kind == kindQuorum {
		return tags.arm, true
	}
	return 0, false
}

// note keeps an answered request as a candidate R. Of those answered in
// one slot of period/slots it keeps the first and the latest: a send whose
// threshold falls inside the slot then leans on an R at most a slot older
// than the best. Of those answered lean(period) or more before now only
// the latest is kept: every later send looks for one answered before a
// time past them all, and prefers the latest.
func (p *proof) note(sent, now, period time.Duration) {
	slot := max(period/slots, time.Millisecond)
	n := len(p.answered)
	if n >= 2 && p.answered[n-1].replied/slot == now/slot && p.answered[n-2].replied/slot == now/slot {
		p.answered[n-1] = answeredAt{sent, now}
	} else {
		p.answered = append(p.answered, answeredAt{sent, now})
	}
	old := 0 // the latest answered a period (lean) ago
	for i, a := range p.answered {
		if a.replied <= now-lean(period) {
			old = i
		}
	}
	if old > 0 {
		p.answered = append(p.answered[:0], p.answered[old:]...)
	}
}
