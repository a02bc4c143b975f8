package queue

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The envelope, byte for byte as Curator's ItemSerializer writes it.
func TestEncodeItems(t *testing.T) {
	for _, tc := range []struct {
		name  string
		items [][]byte
		want  []byte
	}{
		{"one", [][]byte{[]byte("ab")}, []byte{0, 1, 0, 1, 1, 0, 0, 0, 2, 'a', 'b', 2}},
		{"empty item", [][]byte{{}}, []byte{0, 1, 0, 1, 1, 0, 0, 0, 0, 2}},
		{"two", [][]byte{{7}, {8, 9}}, []byte{0, 1, 0, 1, 1, 0, 0, 0, 1, 7, 1, 0, 0, 0, 2, 8, 9, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := encodeItems(tc.items)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			back, err := decodeItems(got)
			require.NoError(t, err)
			assert.Equal(t, tc.items, back)
		})
	}
}

func TestDecodeItemsCorrupt(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"short version", []byte{0, 1, 0}},
		{"other version", []byte{0, 1, 0, 2, 2}},
		{"no end", []byte{0, 1, 0, 1}},
		{"unknown opcode", []byte{0, 1, 0, 1, 3}},
		{"cut length", []byte{0, 1, 0, 1, 1, 0, 0}},
		{"negative length", []byte{0, 1, 0, 1, 1, 0xff, 0xff, 0xff, 0xff, 2}},
		{"length past the end", []byte{0, 1, 0, 1, 1, 0, 0, 0, 5, 'a', 2}},
		{"no end after an item", []byte{0, 1, 0, 1, 1, 0, 0, 0, 1, 'a'}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeItems(tc.data)
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrCorrupt), "%v", err)
		})
	}
}

// Bytes after the end opcode are ignored, as Curator ignores them.
func TestDecodeItemsTrailing(t *testing.T) {
	got, err := decodeItems([]byte{0, 1, 0, 1, 1, 0, 0, 0, 1, 'a', 2, 9, 9})
	require.NoError(t, err)
	assert.Equal(t, [][]byte{[]byte("a")}, got)
}

func FuzzDecodeItems(f *testing.F) {
	f.Add([]byte{0, 1, 0, 1, 1, 0, 0, 0, 1, 'a', 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		items, err := decodeItems(data)
		if err != nil {
			return
		}
		again, err := encodeItems(items)
		require.NoError(t, err)
		back, err := decodeItems(again)
		require.NoError(t, err)
		require.Equal(t, len(items), len(back))
	})
}
