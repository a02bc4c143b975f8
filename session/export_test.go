package session

// ZxidTapMisses is how many of c's CreateWithZxid calls had to read the
// new node's Stat because the reply's zxid was not seen.
func ZxidTapMisses(c *Client) int64 { return c.live.tap.misses.Load() }
