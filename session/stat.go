package session

import (
	"time"

	"github.com/go-zookeeper/zk"
)

// Stat is what ZooKeeper keeps about a node (its Stat structure): the
// zxids of its changes, its versions for conditional writes, and its
// ephemeral owner. Get, Exists, Children and Set return it.
type Stat struct {
	Czxid          int64     // the zxid of the node's creation: a lock's fencing token
	Mzxid          int64     // the zxid of its data's last change
	Pzxid          int64     // the zxid of its children's last change
	Ctime          time.Time // when it was created, by the server's clock (milliseconds)
	Mtime          time.Time // when its data last changed, by the server's clock
	Version        int32     // its data's version, for Set, SetOp, Delete and CheckOp
	Cversion       int32     // how many times its children changed
	Aversion       int32     // how many times its ACL changed
	EphemeralOwner int64     // the session that owns it when ephemeral, else 0
	DataLength     int32     // the length of its data
	NumChildren    int32     // how many children it has
}

// statOf converts go-zookeeper's Stat (nil stays nil).
func statOf(s *zk.Stat) *Stat {
	if s == nil {
		return nil
	}
	return &Stat{
		Czxid: s.Czxid, Mzxid: s.Mzxid, Pzxid: s.Pzxid,
		Ctime: time.UnixMilli(s.Ctime), Mtime: time.UnixMilli(s.Mtime),
		Version: s.Version, Cversion: s.Cversion, Aversion: s.Aversion,
		EphemeralOwner: s.EphemeralOwner, DataLength: s.DataLength, NumChildren: s.NumChildren,
	}
}
