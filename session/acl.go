package session

import (
	"strings"

	"github.com/go-zookeeper/zk"
)

// Perm is a set of ZooKeeper permissions on a node, for an ACL.
type Perm int32

// The permissions, as ZooKeeper's ZooDefs.Perms (a test holds them to
// go-zookeeper's).
const (
	PermRead   Perm = 1 << iota // read the node's data and list its children
	PermWrite                   // write its data
	PermCreate                  // create children
	PermDelete                  // delete children
	PermAdmin                   // set its ACL
	PermAll    Perm = 0x1f      // all of the above
)

// String writes p as ZooKeeper's CLI does: "cdrwa", in that order.
func (p Perm) String() string { return permString(int32(p)) }

// ACL is one entry of a node's access control list: the permissions that
// an identity (Scheme and ID: "world" "anyone", "digest" "user:hash",
// "auth" "", "ip" "10.0.0.0/8", ...) has on it. WithACL sets the ACL of
// every node the client creates.
type ACL struct {
	Perms  Perm
	Scheme string
	ID     string
}

// WorldACL grants perms to anyone (ZooKeeper's OPEN_ACL_UNSAFE with
// PermAll, the client's default).
func WorldACL(perms Perm) []ACL { return aclsOf(zk.WorldACL(int32(perms))) }

// AuthACL grants perms to the identities the creating client
// authenticated as (WithDigestAuth), alone: ZooKeeper's CREATOR_ALL_ACL
// with PermAll. The server stores it as DigestACL of those credentials.
func AuthACL(perms Perm) []ACL { return aclsOf(zk.AuthACL(int32(perms))) }

// DigestACL grants perms to the clients that authenticate as
// user:password with the digest scheme (WithDigestAuth); the password is
// kept as its hash.
func DigestACL(perms Perm, user, password string) []ACL {
	return aclsOf(zk.DigestACL(int32(perms), user, password))
}

func aclsOf(in []zk.ACL) []ACL {
	out := make([]ACL, len(in))
	for i, a := range in {
		out[i] = ACL{Perms: Perm(a.Perms), Scheme: a.Scheme, ID: a.ID}
	}
	return out
}

// wireACL checks acl and converts it to go-zookeeper's, for the requests.
func wireACL(acl []ACL) ([]zk.ACL, error) {
	if len(acl) == 0 {
		return nil, invalid("empty ACL")
	}
	out := make([]zk.ACL, len(acl))
	for i, a := range acl {
		switch {
		case a.Scheme == "":
			return nil, invalid("ACL entry %d has no scheme (world, auth, digest, ip, ...)", i)
		case a.Perms&^PermAll != 0:
			return nil, invalid("ACL entry %d (%s): permissions %#x: must be a set of PermRead, PermWrite, PermCreate, PermDelete, PermAdmin",
				i, a.Scheme, int32(a.Perms))
		}
		out[i] = zk.ACL{Perms: int32(a.Perms), Scheme: a.Scheme, ID: a.ID}
	}
	return out, nil
}

// ownPerms are the permissions the recipes need of the client's own
// identity on the nodes it creates: list and read a queue (read), join it
// (create), leave it and clean up (delete). Write (a SharedCount, a
// revocation request) is needed by some recipes only.
const ownPerms = zk.PermRead | zk.PermCreate | zk.PermDelete

// permString writes perms as ZooKeeper's CLI does: "cdrwa", in that order.
func permString(perms int32) string {
	var b strings.Builder
	for _, p := range []struct {
		bit  int32
		name byte
	}{{zk.PermCreate, 'c'}, {zk.PermDelete, 'd'}, {zk.PermRead, 'r'}, {zk.PermWrite, 'w'}, {zk.PermAdmin, 'a'}} {
		if perms&p.bit != 0 {
			b.WriteByte(p.name)
		}
	}
	return b.String()
}
