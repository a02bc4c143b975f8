package session

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// ValidatePath checks that p is a path ZooKeeper accepts: absolute, no
// trailing slash (but for "/" itself), no empty, "." or ".." segment, valid
// UTF-8 and none of the characters ZooKeeper refuses (NUL, control
// characters, U+D800–U+F8FF, U+FFF0–U+FFFF). The error is ErrInvalidArgument
// and names the problem.
func ValidatePath(p string) error {
	bad := func(why string) error {
		return fmt.Errorf("%w: path %q: %s", ErrInvalidArgument, p, why)
	}
	switch {
	case p == "":
		return bad("empty")
	case p[0] != '/':
		return bad("not absolute (must start with /)")
	case p == "/":
		return nil
	case strings.HasSuffix(p, "/"):
		return bad("trailing slash")
	case !utf8.ValidString(p):
		return bad("not valid UTF-8")
	}
	rest := p[1:]
	for i := 1; ; i++ {
		seg, tail, more := strings.Cut(rest, "/")
		switch seg {
		case "":
			return bad(fmt.Sprintf("empty segment %d", i))
		case ".", "..":
			return bad(fmt.Sprintf("relative segment %q", seg))
		}
		if !more {
			break
		}
		rest = tail
	}
	for _, r := range p {
		if refusedRune(r) {
			return bad(fmt.Sprintf("character %U not allowed", r))
		}
	}
	return nil
}

// refusedRune reports the characters ZooKeeper's PathUtils refuses.
func refusedRune(r rune) bool {
	return r == 0 ||
		(r > 0x00 && r <= 0x1f) ||
		(r >= 0x7f && r <= 0x9f) ||
		(r >= 0xd800 && r <= 0xf8ff) ||
		(r >= 0xfff0 && r <= 0xffff)
}

// JoinPath joins a parent path and a child name ("/a" + "b" = "/a/b",
// "/" + "b" = "/b").
func JoinPath(parent, child string) string {
	if parent == "/" {
		return "/" + child
	}
	return parent + "/" + child
}

// ParentPath returns the parent of an absolute path ("/a/b" -> "/a",
// "/a" -> "/").
func ParentPath(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// BaseName returns the last segment of a path.
func BaseName(p string) string {
	return p[strings.LastIndexByte(p, '/')+1:]
}

// namespace maps recipe paths to server paths under a prefix.
type namespace string

// full maps a client path to the server path.
func (ns namespace) full(p string) string {
	switch {
	case ns == "":
		return p
	case p == "/":
		return string(ns)
	default:
		return string(ns) + p
	}
}

// strip maps a server path back to the client path.
func (ns namespace) strip(p string) string {
	if ns == "" {
		return p
	}
	rest := strings.TrimPrefix(p, string(ns))
	if rest == "" {
		return "/"
	}
	return rest
}
