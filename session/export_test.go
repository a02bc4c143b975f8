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
