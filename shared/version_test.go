package shared_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/zkrecipes/zkrecipes/shared"
)

// The version comparison across ZooKeeper's int32 wrap (CURATOR-688). A
// server cannot be brought near MaxInt32 writes in a test (2^31 setData),
// so the comparison is tested here as a unit, and Changes uses it.
func TestNewer(t *testing.T) {
	for _, tc := range []struct {
		a, b int32
		want bool
	}{
		{0, 1, true},
		{1, 0, false},
		{5, 5, false},
		{math.MaxInt32, math.MinInt32, true}, // the write after the wrap: Curator's b > a said no
		{math.MinInt32, math.MaxInt32, false},
		{math.MaxInt32 - 1, math.MinInt32 + 2, true},
		{-1, 0, true},
		{0, math.MaxInt32, true}, // 2^31-1 writes ahead: the farthest that is newer
		{0, math.MinInt32, false},
	} {
		assert.Equal(t, tc.want, shared.Newer(tc.a, tc.b), "Newer(%d, %d)", tc.a, tc.b)
	}
}
