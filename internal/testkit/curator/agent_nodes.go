package curator

import (
	"encoding/hex"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// NodeMode is the create mode of a PersistentNode the agent runs.
type NodeMode string

// The create modes StartPersistentNode takes (Curator's CreateMode).
const (
	NodePersistent           NodeMode = "persistent"
	NodeEphemeral            NodeMode = "ephemeral"
	NodePersistentSequential NodeMode = "persistent-sequential"
	NodeEphemeralSequential  NodeMode = "ephemeral-sequential"
)

// StartPersistentNode starts Curator's PersistentNode on path (several may
// run, each known by its path), waits at most within (measured in the
// JVM) for its initial create, and returns the node's actual path, or ""
// when it was not made within.
func (a *Agent) StartPersistentNode(t testing.TB, path string, mode NodeMode, data []byte, protected bool, within time.Duration) string {
	t.Helper()
	checkPath(t, a.name, "StartPersistentNode", path)
	cmd := "pnode " + path + " " + string(mode) + " " + hexData(data)
	if protected {
		cmd += " protected"
	}
	cmd += " " + strconv.FormatInt(within.Milliseconds(), 10)
	return a.actualPath(t, cmd)
}

// PersistentNodePath is the PersistentNode's getActualPath ("" for none).
func (a *Agent) PersistentNodePath(t testing.TB, path string) string {
	t.Helper()
	checkPath(t, a.name, "PersistentNodePath", path)
	return a.actualPath(t, "pnode-path "+path)
}

// SetPersistentNodeData is the PersistentNode's setData.
func (a *Agent) SetPersistentNodeData(t testing.TB, path string, data []byte) {
	t.Helper()
	checkPath(t, a.name, "SetPersistentNodeData", path)
	a.DoExpect(t, "pnode-set "+path+" "+hexData(data), "ok")
}

// ClosePersistentNode closes the PersistentNode (Curator deletes its node).
func (a *Agent) ClosePersistentNode(t testing.TB, path string) {
	t.Helper()
	checkPath(t, a.name, "ClosePersistentNode", path)
	a.DoExpect(t, "pnode-close "+path, "closed")
}

// JoinGroup starts Curator's GroupMember of the group at path as id.
func (a *Agent) JoinGroup(t testing.TB, path, id string, data []byte) {
	t.Helper()
	checkPath(t, a.name, "JoinGroup", path)
	if id == "" || strings.ContainsAny(id, " \t\r\n/") {
		t.Fatalf("%s: JoinGroup: id %q: want one word without '/'", a.name, id)
	}
	a.DoExpect(t, "group "+path+" "+id+" "+hexData(data), "ok")
}

// GroupMembers is the GroupMember's getCurrentMembers: the data of each
// member by id (empty data as nil).
func (a *Agent) GroupMembers(t testing.TB, path string) map[string][]byte {
	t.Helper()
	checkPath(t, a.name, "GroupMembers", path)
	out := map[string][]byte{}
	for _, it := range a.List(t, "group-members "+path, "members") {
		id, d, ok := strings.Cut(it, ",")
		if !ok {
			t.Fatalf("%s: group-members: member %q: want ID,HEX\n%s", a.name, it, a.report())
		}
		name, err := url.PathUnescape(id)
		if err != nil {
			t.Fatalf("%s: group-members: member %q: %v\n%s", a.name, it, err, a.report())
		}
		var data []byte
		if d != "-" {
			if data, err = hex.DecodeString(d); err != nil {
				t.Fatalf("%s: group-members: member %q: %v\n%s", a.name, it, err, a.report())
			}
		}
		out[name] = data
	}
	return out
}

// SetGroupData is the GroupMember's setThisData.
func (a *Agent) SetGroupData(t testing.TB, path string, data []byte) {
	t.Helper()
	checkPath(t, a.name, "SetGroupData", path)
	a.DoExpect(t, "group-set "+path+" "+hexData(data), "ok")
}

// LeaveGroup closes the GroupMember (its node is deleted).
func (a *Agent) LeaveGroup(t testing.TB, path string) {
	t.Helper()
	checkPath(t, a.name, "LeaveGroup", path)
	a.DoExpect(t, "group-close "+path, "closed")
}

// actualPath runs cmd, whose reply is "path ACTUAL" or "path -".
func (a *Agent) actualPath(t testing.TB, cmd string) string {
	t.Helper()
	p, err := url.PathUnescape(a.Value(t, cmd, "path"))
	if err != nil {
		t.Fatalf("%s: reply to %q: %v\n%s", a.name, cmd, err, a.report())
	}
	if p == "-" {
		return ""
	}
	return p
}

// hexData is data as a command's HEX ("-" for none).
func hexData(data []byte) string {
	if len(data) == 0 {
		return "-"
	}
	return hex.EncodeToString(data)
}
