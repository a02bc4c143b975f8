package session

import "github.com/go-zookeeper/zk"

// The errors of ZooKeeper that the operations return, wrapped: test them
// with errors.Is. They are go-zookeeper's values, so errors.Is holds with
// either name.
var (
	// ErrNoNode: the node does not exist.
	ErrNoNode = zk.ErrNoNode
	// ErrNodeExists: Create of a node that exists.
	ErrNodeExists = zk.ErrNodeExists
	// ErrBadVersion: a write's version did not match the node's.
	ErrBadVersion = zk.ErrBadVersion
	// ErrNotEmpty: Delete of a node that has children.
	ErrNotEmpty = zk.ErrNotEmpty
	// ErrNoChildrenForEphemerals: Create under an ephemeral node.
	ErrNoChildrenForEphemerals = zk.ErrNoChildrenForEphemerals
	// ErrNoAuth: the node's ACL does not grant the client's identities
	// what the operation needs.
	ErrNoAuth = zk.ErrNoAuth
	// ErrInvalidACL: the server refused the ACL of a create.
	ErrInvalidACL = zk.ErrInvalidACL
	// ErrAuthFailed: the server refused the client's credentials.
	ErrAuthFailed = zk.ErrAuthFailed
	// ErrSessionExpired: the server expired the session.
	ErrSessionExpired = zk.ErrSessionExpired
	// ErrClosing: a watch ended because its connection was closed (by
	// Close, or on the client's move to a new session): Event.Err of an
	// EventNotWatching.
	ErrClosing = zk.ErrClosing
	// ErrConnectionClosed: the connection was lost before the reply came;
	// the operation may or may not have been applied (IsRetryable).
	ErrConnectionClosed = zk.ErrConnectionClosed
)
