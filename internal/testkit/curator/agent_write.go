package curator

import (
	"strings"
	"testing"
)

// WriteFlag modifies Create and SetData.
type WriteFlag string

// The flags of Create (all) and SetData (Compressed only).
const (
	// Ephemeral creates an ephemeral node of the agent's session.
	Ephemeral WriteFlag = "ephemeral"
	// Sequential appends ZooKeeper's sequence number to the name.
	Sequential WriteFlag = "sequential"
	// Compressed writes the data with Curator's compression (its default
	// GzipCompressionProvider: gzip, magic 1f 8b), as compressed() does.
	Compressed WriteFlag = "compressed"
)

// Create makes Curator create path with data (creatingParentsIfNeeded:
// missing parents are made persistent and empty) and returns the path made
// (Sequential adds its suffix) and its stat. Persistent unless flags say
// Ephemeral.
func (a *Agent) Create(t testing.TB, path string, data []byte, flags ...WriteFlag) (string, Stat) {
	t.Helper()
	return a.write(t, "create", path, data, flags)
}

// SetData makes Curator set path's data (any version) and returns its new
// stat. Of the flags only Compressed applies.
func (a *Agent) SetData(t testing.TB, path string, data []byte, flags ...WriteFlag) Stat {
	t.Helper()
	_, st := a.write(t, "set", path, data, flags)
	return st
}

// Delete makes Curator delete path and everything below it
// (deletingChildrenIfNeeded).
func (a *Agent) Delete(t testing.TB, path string) {
	t.Helper()
	checkPath(t, a.name, "Delete", path)
	a.DoExpect(t, "delete "+path, "deleted")
}

// write runs create or set and parses its "stat PATH CZXID MZXID VERSION".
func (a *Agent) write(t testing.TB, verb, path string, data []byte, flags []WriteFlag) (string, Stat) {
	t.Helper()
	checkPath(t, a.name, verb, path)
	cmd := verb + " " + path + " " + hexData(data)
	for _, f := range flags {
		cmd += " " + string(f)
	}
	reply := a.Do(t, cmd)
	rest, ok := strings.CutPrefix(reply, "stat ")
	f := strings.Fields(rest)
	if !ok || len(f) != 4 {
		t.Fatalf("%s: reply to %q is %q, want stat PATH CZXID MZXID VERSION\n%s", a.name, cmd, reply, a.report())
	}
	p, st, err := parsePathStat(f)
	if err != nil {
		t.Fatalf("%s: reply to %q is %q: %v\n%s", a.name, cmd, reply, err, a.report())
	}
	return p, st
}

// checkPath fails t when path cannot be one word of a command.
func checkPath(t testing.TB, name, what, path string) {
	t.Helper()
	if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " \t\r\n") {
		t.Fatalf("%s: %s: path %q: want an absolute path without spaces", name, what, path)
	}
}
