package barrier

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDecideEnter(t *testing.T) {
	for _, tc := range []struct {
		name     string
		children []string
		want     enterStep
	}{
		{"alone below the threshold", []string{"b"}, enterWait},
		{"two of three", []string{"a", "b"}, enterWait},
		{"three of three", []string{"a", "b", "c"}, enterOpen},
		{"more than the threshold", []string{"a", "b", "c", "d"}, enterOpen},
		{"ready exists", []string{"b", ReadyNode}, enterThrough},
		{"ours gone, ready exists", []string{"a", ReadyNode}, enterLost},
		{"ours gone, enough others", []string{"a", "c", "d"}, enterLost},
		// GH-1290: a member woken with too few members in looks again.
		{"woken, still two of three", []string{"b", "c"}, enterWait},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, decideEnter(tc.children, "b", 3))
		})
	}
}

func TestDecideLeave(t *testing.T) {
	for _, tc := range []struct {
		name      string
		children  []string
		ours      string
		ourExists bool
		want      leaveStep
		target    string
	}{
		{"empty", nil, "b", false, leaveDone, ""},
		{"only ready", []string{ReadyNode}, "b", false, leaveDone, ""},
		{"last one, ours", []string{"b", ReadyNode}, "b", true, leaveLast, ""},
		{"lowest of three", []string{"c", "a", "b"}, "a", true, leaveWatchHighest, "c"},
		{"middle of three", []string{"c", "a", "b", ReadyNode}, "b", true, leaveWatchLowest, "a"},
		{"highest of three", []string{"c", "a", "b"}, "c", true, leaveWatchLowest, "a"},
		{"ours deleted, others in", []string{"a", "c"}, "b", false, leaveWatchLowest, "a"},
		// Curator goes through here; the one left may not have left.
		{"ours deleted, one other in", []string{"a"}, "b", false, leaveWatchLowest, "a"},
		{"ours gone unexpectedly", []string{"a", "c"}, "b", true, leaveLost, ""},
		{"ours gone, no one left", nil, "b", true, leaveDone, ""},
		// Curator's order of UUIDs: byte order of lowercase hex.
		{"uuid order", []string{"f0000000-0000", "0a000000-0000", "a0000000-0000"}, "0a000000-0000", true,
			leaveWatchHighest, "f0000000-0000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			step, target := decideLeave(tc.children, tc.ours, tc.ourExists)
			assert.Equal(t, tc.want, step)
			assert.Equal(t, tc.target, target)
		})
	}
}
