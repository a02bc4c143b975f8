package znode

import (
	"strconv"
	"strings"
	"time"
)

// SeqDigits is the width of the sequence ZooKeeper appends to the name of a
// sequential node: ten digits, zero-padded.
const SeqDigits = 10

// Child is the name of a node in a lock's queue, parsed: what the recipes
// order their queues by, and what an inspection tool (zklock ls) classifies
// nodes by.
type Child struct {
	Name string // the node's name (no path)
	Kind string // the lock name it was created with ("lock-", "__READ__", ...); "" when it has none of those asked for
	Seq  int64  // its sequence number
}

// ParseChild parses the name of a node under a lock path (a name, not a
// path) against the lock names of the recipes that may queue there:
// Curator's "lock-" (mutex.LockName), "__READ__" and "__WRIT__" (rwlock),
// "latch-" (leader.LatchName), "lease-" (semaphore.LeaseName); kazoo's
// "__lock__" and "__rlock__". Curator's protected nodes
// ("_c_<uuid>-lock-0000000001") and plain ones ("lock-0000000001") parse
// alike. Kind is the lock name that occurs last in the name, and Seq the
// SeqDigits digits that follow it, as Curator sorts; a name with none of
// the lock names falls back to its trailing SeqDigits digits, with Kind "".
// ok is false for a name that is not a queue entry (no sequence where one
// is wanted: "lock", "readme", a lock name followed by anything but ten
// digits).
func ParseChild(name string, lockNames ...string) (c Child, ok bool) {
	kind, at := "", -1
	for _, ln := range lockNames {
		if i := strings.LastIndex(name, ln); ln != "" && i > at {
			kind, at = ln, i
		}
	}
	digits := ""
	if at >= 0 {
		digits = name[at+len(kind):]
	} else if len(name) >= SeqDigits {
		digits = name[len(name)-SeqDigits:]
	}
	if len(digits) != SeqDigits {
		return Child{}, false
	}
	seq, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || seq < 0 {
		return Child{}, false
	}
	return Child{Name: name, Kind: kind, Seq: seq}, true
}

// Participant is one node in a lock's queue, as Curator's
// getParticipantNodes lists them.
type Participant struct {
	Name      string // the node's name, as ParseChild takes it
	Path      string // the node's path (without the client's namespace), as Revoke takes it and Lease.Node gives it
	Kind      string // the lock name of the node ("lock-", "__READ__", ...)
	Seq       int64  // its sequence number
	SessionID int64  // its ephemeral owner
	Data      []byte // what the participant stored (Curator: its id)
	Holder    bool   // the node holds the lock
	// Created is when the node was made, by the server's clock (its ctime,
	// to the millisecond): for a holder that queued, when it began to
	// wait. The listing reads it with the rest, at no extra request.
	Created time.Time
}
