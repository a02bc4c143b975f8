package session

import (
	"time"

	"github.com/go-zookeeper/zk"
)

// Stat is what ZooKeeper keeps about a node (its Stat structure): the
// zxids of its changes, its versions for conditional writes, and its
// ephemeral owner. Get, Exists, Children and Set return it.
//
// Its fields are go-zookeeper's, in its order, so that a reply's Stat
// converts without a copy (statOf): an operation costs no allocation for
// it. The compiler holds the two in step.
type Stat struct {
	Czxid          int64 // the zxid of the node's creation: a lock's fencing token
	Mzxid          int64 // the zxid of its data's last change
	Ctime          int64 // when it was created: milliseconds since the epoch, by the server's clock (Created)
	Mtime          int64 // when its data last changed, as Ctime (Modified)
	Version        int32 // its data's version, for Set, SetOp, Delete and CheckOp
	Cversion       int32 // how many times its children changed
	Aversion       int32 // how many times its ACL changed
	EphemeralOwner int64 // the session that owns it when ephemeral, else 0
	DataLength     int32 // the length of its data
	NumChildren    int32 // how many children it has
	Pzxid          int64 // the zxid of its children's last change
}

// Created is Ctime as a time.
func (s *Stat) Created() time.Time { return time.UnixMilli(s.Ctime) }

// Modified is Mtime as a time.
func (s *Stat) Modified() time.Time { return time.UnixMilli(s.Mtime) }

// statOf is go-zookeeper's Stat as ours (nil stays nil), without a copy.
func statOf(s *zk.Stat) *Stat { return (*Stat)(s) }
