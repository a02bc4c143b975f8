package session

import (
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
)

// TestCheckACL: an ACL is refused when the client's own identities (anyone,
// its creator identity, the digest of one of its credentials) are granted
// less than read, create and delete, and left to the server when it names
// an identity the client cannot judge.
func TestCheckACL(t *testing.T) {
	alice := [][]byte{[]byte("alice:pw")}
	join := func(acls ...[]zk.ACL) []zk.ACL {
		var out []zk.ACL
		for _, a := range acls {
			out = append(out, a...)
		}
		return out
	}
	for name, tc := range map[string]struct {
		acl     []zk.ACL
		auth    [][]byte
		refused string // "" when accepted
	}{
		"open":                     {zk.WorldACL(zk.PermAll), nil, ""},
		"creator":                  {zk.AuthACL(zk.PermAll), alice, ""},
		"creator, others read":     {join(zk.AuthACL(zk.PermAll), zk.WorldACL(zk.PermRead)), alice, ""},
		"own digest":               {zk.DigestACL(zk.PermAll, "alice", "pw"), alice, ""},
		"own digest, no admin":     {zk.DigestACL(zk.PermRead|zk.PermCreate|zk.PermDelete, "alice", "pw"), alice, ""},
		"split between entries":    {join(zk.AuthACL(zk.PermCreate|zk.PermDelete), zk.WorldACL(zk.PermRead)), alice, ""},
		"an ip the server judges":  {[]zk.ACL{{Perms: zk.PermAll, Scheme: "ip", ID: "127.0.0.1"}}, nil, ""},
		"creator, no credentials":  {zk.AuthACL(zk.PermAll), nil, "needs credentials"},
		"another user":             {zk.DigestACL(zk.PermAll, "bob", "pw"), alice, `identity "" of the "cdr"`},
		"own user, wrong password": {zk.DigestACL(zk.PermAll, "alice", "other"), alice, `identity ""`},
		"read only":                {zk.WorldACL(zk.PermRead), nil, `identity "r" of the "cdr"`},
		"no delete":                {zk.AuthACL(zk.PermRead | zk.PermCreate | zk.PermWrite), alice, `identity "cr" of`},
	} {
		t.Run(name, func(t *testing.T) {
			err := (&config{acl: tc.acl, auth: tc.auth}).checkACL()
			if tc.refused == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, ErrInvalidArgument)
			assert.ErrorContains(t, err, tc.refused)
		})
	}
}
