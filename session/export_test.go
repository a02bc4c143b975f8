package session

// ZxidTapMisses is how many of c's CreateWithZxid calls had to read the
// new node's Stat because the reply's zxid was not seen.
func ZxidTapMisses(c *Client) int64 { return c.live.tap.misses.Load() }

// ProofIdle reports whether c's current connection has had its first
// round of proof answered and has none out: the next is an interval away
// (a quarter of the session timeout at least).
func ProofIdle(c *Client) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.proofOut && c.roundsOnConn > 0 && c.roundConn != nil
}

// AbandonedCalls is how many of c's abandoned calls have not returned.
func AbandonedCalls(c *Client) int {
	o := &c.order
	o.mu.Lock()
	defer o.mu.Unlock()
	o.pruneLocked()
	return len(o.abandoned)
}

// PendingRequests is how many requests of opcode op c's current connection
// has written and not yet seen answered.
func PendingRequests(c *Client, op int32) int {
	t := c.live.conn.Load()
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, r := range t.pending {
		if r.op == op {
			n++
		}
	}
	return n
}
