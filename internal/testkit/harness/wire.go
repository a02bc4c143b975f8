package harness

// CreateWithZxidSize is the size on the wire, length prefix included, of the
// request session.Client.CreateWithZxid sends for node without guards: a
// plain create of node with empty data and the open ACL. Proxy.ResetAfter
// with this size cuts a connection right after the whole request has
// reached the server: the server applies it, and its reply is lost.
func CreateWithZxidSize(node string) int64 {
	const header = 4 + 4 + 4 // length, xid, opcode
	acl := 4 + (4 + 4 + len("world") + 4 + len("anyone"))
	return int64(header + 4 + len(node) + 4 + acl + 4) // path, data, acl, flags
}
