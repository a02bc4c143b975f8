package session

import "fmt"

// CreateMode is the kind of node Create makes, as Curator's CreateMode.
type CreateMode int32

// The create modes. The values are ZooKeeper's create flags (a test
// holds them to go-zookeeper's).
const (
	// Persistent: the node stays until it is deleted.
	Persistent CreateMode = 0
	// Ephemeral: the node is deleted when the session that made it ends.
	Ephemeral CreateMode = 1
	// PersistentSequential: Persistent, with a ten-digit sequence number
	// (the parent's counter) appended to the name.
	PersistentSequential CreateMode = 2
	// EphemeralSequential: Ephemeral, with a sequence number appended;
	// the node of a lock's queue.
	EphemeralSequential CreateMode = 3
	// Container: a persistent node that the server deletes once it has
	// had a child and has none left (ZooKeeper 3.5+; Create only).
	Container CreateMode = 4
	// PersistentWithTTL: a persistent node that the server deletes when
	// it has had no child and no write for its TTL. The server must run
	// with zookeeper.extendedTypesEnabled=true (CreateTTL only).
	PersistentWithTTL CreateMode = 5
	// PersistentSequentialWithTTL: PersistentWithTTL with a sequence
	// number appended (CreateTTL only).
	PersistentSequentialWithTTL CreateMode = 6
)

// IsEphemeral reports whether the node ends with its session.
func (m CreateMode) IsEphemeral() bool { return m == Ephemeral || m == EphemeralSequential }

// IsSequential reports whether the server appends a sequence number.
func (m CreateMode) IsSequential() bool {
	return m == PersistentSequential || m == EphemeralSequential || m == PersistentSequentialWithTTL
}

// HasTTL reports whether the node takes a TTL (CreateTTL).
func (m CreateMode) HasTTL() bool { return m == PersistentWithTTL || m == PersistentSequentialWithTTL }

// Unsequenced returns m without its sequence number: the mode that makes
// again, at the same path, a node first made in mode m.
func (m CreateMode) Unsequenced() CreateMode {
	switch m {
	case PersistentSequential:
		return Persistent
	case EphemeralSequential:
		return Ephemeral
	case PersistentSequentialWithTTL:
		return PersistentWithTTL
	}
	return m
}

func (m CreateMode) String() string {
	switch m {
	case Persistent:
		return "Persistent"
	case Ephemeral:
		return "Ephemeral"
	case PersistentSequential:
		return "PersistentSequential"
	case EphemeralSequential:
		return "EphemeralSequential"
	case Container:
		return "Container"
	case PersistentWithTTL:
		return "PersistentWithTTL"
	case PersistentSequentialWithTTL:
		return "PersistentSequentialWithTTL"
	}
	return fmt.Sprintf("CreateMode(%d)", int32(m))
}

// flags checks m and returns it as go-zookeeper's create flags, for the
// requests that take the four plain modes (CreateWithZxid, CreateAndList,
// Multi): a container or a TTL node is made by its own request.
func (m CreateMode) flags() (int32, error) {
	switch m {
	case Persistent, Ephemeral, PersistentSequential, EphemeralSequential:
		return int32(m), nil
	}
	return 0, invalid("create mode %d: use Persistent, Ephemeral, PersistentSequential or EphemeralSequential", int32(m))
}
