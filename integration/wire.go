package integration

// CreateWithZxidSize is the size on the wire, length prefix included, of the
// request session.Client.CreateWithZxid sends for node (a multi: create
// node with empty data and the open ACL, then set empty data on parent).
// Proxy.ResetAfter with this size cuts a connection right after the whole
// request has reached the server: the server applies it, and its reply is
// lost.
func CreateWithZxidSize(node, parent string) int64 {
	const header = 4 + 4 + 4   // length, xid, opcode
	const opHeader = 4 + 1 + 4 // type, done, err
	acl := 4 + (4 + 4 + len("world") + 4 + len("anyone"))
	create := opHeader + 4 + len(node) + 4 + acl + 4
	set := opHeader + 4 + len(parent) + 4 + 4
	return int64(header + create + set + opHeader)
}
