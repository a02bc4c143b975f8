package rwlock

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/engine"
)

// queue builds a sorted queue from a compact spec: "R3" is a reader with
// sequence 3, "W4" a writer, "r5"/"w6" kazoo's reader and writer, "D4" the
// downgraded read node of writer 4.
func queue(spec ...string) []engine.Child {
	names := make([]string, len(spec))
	for i, s := range spec {
		var seq int
		_, _ = fmt.Sscanf(s[1:], "%d", &seq)
		switch s[0] {
		case 'R':
			names[i] = fmt.Sprintf("_c_%08d-0000-0000-0000-000000000000-%s%010d", i, ReadName, seq)
		case 'D':
			names[i] = fmt.Sprintf("_c_ffffffff-0000-0000-0000-%012d-%s%010d", i, ReadName, seq)
		case 'W':
			names[i] = fmt.Sprintf("_c_%08d-0000-0000-0000-000000000000-%s%010d", i, WriteName, seq)
		case 'r':
			names[i] = fmt.Sprintf("abcdef%d%s%010d", i, kazooR, seq)
		case 'w':
			names[i] = fmt.Sprintf("abcdef%d%s%010d", i, kazooW, seq)
		}
	}
	return engine.SortChildren(names, kinds...)
}

func TestDriver(t *testing.T) {
	type want struct {
		owns    bool
		watch   int // index of the watched node, -1 for none
		fast    bool
		refresh int // index, -1 for none
	}
	for _, tc := range []struct {
		name  string
		queue []string
		ours  int
		write bool
		want  want
	}{
		{"first writer owns", []string{"W1", "R2"}, 0, true, want{true, -1, false, -1}},
		{"writer behind a reader head: fast", []string{"R1", "W2"}, 1, true, want{false, 0, true, -1}},
		{"writer behind a writer head: no fast (it may downgrade)", []string{"W1", "W2"}, 1, true, want{false, 0, false, -1}},
		{"writer deep: watch predecessor, refresh on the one before", []string{"R1", "R2", "W3", "W4"}, 3, true, want{false, 2, false, 1}},
		{"readers share", []string{"R1", "R2", "R3"}, 2, false, want{true, -1, false, -1}},
		{"reader behind one writer: fast", []string{"R1", "W2", "R3", "R4"}, 3, false, want{false, 1, true, -1}},
		{"reader behind two writers: nearest, refresh on the other", []string{"W1", "R2", "W3", "R4"}, 3, false, want{false, 2, false, 0}},
		{"kazoo writer blocks readers", []string{"w1", "R2"}, 1, false, want{false, 0, true, -1}},
		{"kazoo reader shares", []string{"r1", "R2"}, 1, false, want{true, -1, false, -1}},
		{"downgraded reader beside its writer: readers behind wait for the writer only",
			[]string{"W4", "D4", "R5"}, 2, false, want{false, 0, true, -1}},
		{"downgraded reader keeps a queued writer out", []string{"D4", "W5"}, 1, true, want{false, 0, true, -1}},
		{"writer behind writer and its downgrade node watches the read node",
			[]string{"W4", "D4", "W5"}, 2, true, want{false, 1, false, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kids := queue(tc.queue...)
			got, err := driver{writerLookahead: true, readerLookahead: true}.Decide(kids, tc.ours)
			require.NoError(t, err)
			exp := engine.Decision{Owns: tc.want.owns, FastHandoff: tc.want.fast}
			if tc.want.watch >= 0 {
				exp.Watch = kids[tc.want.watch].Name
			}
			if tc.want.refresh >= 0 {
				exp.Refresh = kids[tc.want.refresh].Name
			}
			assert.Equal(t, exp, got)
			// Without lookahead: only the predecessor, or the nearest writer.
			plain, err := driver{}.Decide(kids, tc.ours)
			require.NoError(t, err)
			exp.Refresh = ""
			assert.Equal(t, exp, plain, "no lookahead")
		})
	}
	_, err := driver{}.Decide(queue("R1"), 1)
	assert.Error(t, err)
}

// The downgraded read node shares its writer's sequence and must sort right
// behind it, ahead of every node created later.
func TestDowngradeNodeOrder(t *testing.T) {
	kids := queue("W5", "R6", "D5", "W7")
	assert.Equal(t, []string{WriteName, ReadName, ReadName, WriteName}, []string{kids[0].Kind, kids[1].Kind, kids[2].Kind, kids[3].Kind})
	assert.Equal(t, []int64{5, 5, 6, 7}, []int64{kids[0].Seq, kids[1].Seq, kids[2].Seq, kids[3].Seq})
}

func TestParticipantsViewOfDowngrade(t *testing.T) {
	kids := queue("W4", "D4", "R5", "W6")
	var holders []bool
	for i := range kids {
		d, err := driver{}.Decide(kids, i)
		require.NoError(t, err)
		holders = append(holders, d.Owns)
	}
	assert.Equal(t, []bool{true, true, false, false}, holders, "the downgraded reader holds with its writer")
}
