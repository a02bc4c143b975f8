package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/zkrecipes/zkrecipes/session"
)

// The values of --acl.
const (
	aclCreator = "creator" // session.AuthACL(session.PermAll): the authenticated identity alone
	aclOpen    = "open"    // session.WorldACL(session.PermAll): anyone
	aclRead    = "read"    // the identity may do anything, anyone may read (ls, watch)
)

// zkSchemes are the authentication schemes ZooKeeper knows (its own and
// the usual plug-ins'). A message names the first word of a line of
// --auth-file only when it is one of them: another word may be the
// secret itself ("s3cretpw alice").
var zkSchemes = map[string]bool{
	"digest": true, "sasl": true, "ip": true, "x509": true, "world": true,
	"super": true, "auth": true, "kerberos": true,
}

// digestCred is one "digest USER:PASSWORD" line of --auth-file.
type digestCred struct{ user, password string }

// readAuthFile reads --auth-file: one "digest USER:PASSWORD" a line,
// blank lines and lines starting with # left out. The errors name the
// file and the line, never what is on it.
func readAuthFile(file string) ([]digestCred, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--auth-file: %v", err)
	}
	var creds []digestCred
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		scheme, cred, _ := strings.Cut(line, " ")
		cred = strings.TrimSpace(cred)
		if scheme != "digest" {
			// The scheme is the first word: named when it is one
			// ZooKeeper knows, not when it may be the credentials.
			if cred == "" || !zkSchemes[scheme] {
				return nil, fmt.Errorf("--auth-file %s, line %d: want \"digest USER:PASSWORD\"", file, n)
			}
			return nil, fmt.Errorf("--auth-file %s, line %d: scheme %q is not supported: zklock authenticates with digest only (digest USER:PASSWORD)", file, n, scheme)
		}
		user, password, ok := strings.Cut(cred, ":")
		if !ok || user == "" {
			return nil, fmt.Errorf("--auth-file %s, line %d: want \"digest USER:PASSWORD\"", file, n)
		}
		creds = append(creds, digestCred{user: user, password: password})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--auth-file %s: %v", file, err)
	}
	if len(creds) == 0 {
		return nil, fmt.Errorf("--auth-file %s: no \"digest USER:PASSWORD\" line in it", file)
	}
	return creds, nil
}

// aclFor is the ACL of the nodes zklock creates for --acl mode (already
// checked).
func aclFor(mode string) []session.ACL {
	switch mode {
	case aclCreator:
		return session.AuthACL(session.PermAll)
	case aclRead:
		return append(session.AuthACL(session.PermAll), session.WorldACL(session.PermRead)...)
	default:
		return session.WorldACL(session.PermAll)
	}
}

// validateACL checks --acl against --auth-file and fills in its default:
// creator with credentials (no client without them may delete a holder's
// node and so take its lock), open without (ZooKeeper refuses a
// creator-only ACL from a session with no identity; and open is Curator's
// default).
func validateACL(mode *string, authFile string) error {
	switch *mode {
	case "":
		*mode = aclOpen
		if authFile != "" {
			*mode = aclCreator
		}
		return nil
	case aclOpen:
		return nil
	case aclCreator, aclRead:
		if authFile == "" {
			return fmt.Errorf("--acl %s needs --auth-file: the nodes are given to the identity it holds", *mode)
		}
		return nil
	}
	return fmt.Errorf("unknown --acl %q: want creator, open or read", *mode)
}
