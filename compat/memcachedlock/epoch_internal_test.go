package memcachedlock

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
)

// A marker's value gives its server's start time, or none (0): the "1" of
// earlier versions and of Locks without the address, or anything else.
func TestMarkerStart(t *testing.T) {
	assert.Equal(t, int64(1795845957), markerStart(markerValue(1795845957)))
	for _, v := range []string{undated, "", "e", "e-5", "e0", "e12x", "1795845957", "x1795845957", "e99999999999999999999"} {
		assert.Zero(t, markerStart([]byte(v)), "%q", v)
	}
}

// A token orders first the servers' start times, then the CAS values of
// one server; one that cannot fit in an int64 is an error, never a token
// that wrapped around.
func TestFence(t *testing.T) {
	const start = 1795845957
	const tenDays = 10 * 86400
	a, err := fence(start, 1<<40) // after ten days of 1.3 million writes a second
	require.NoError(t, err)
	b, err := fence(start+tenDays, 1) // the next process, started then
	require.NoError(t, err)
	assert.Less(t, a, b)
	c, err := fence(start+tenDays, 2)
	require.NoError(t, err)
	assert.Equal(t, b+1, c)
	d, err := fence(start, 2*epochScale-1) // one that lived 2 s: the next starts 2 s later at least
	require.NoError(t, err)
	e, err := fence(start+2, 1)
	require.NoError(t, err)
	assert.Less(t, d, e)

	last, err := fence(maxEpoch, 1)
	require.NoError(t, err)
	assert.Positive(t, last)
	for _, tc := range []struct {
		start int64
		cas   uint64
	}{
		{0, 1}, {-1, 1}, {maxEpoch + 1, 1}, {start, math.MaxUint64}, {start, math.MaxInt64},
	} {
		_, err := fence(tc.start, tc.cas)
		require.ErrorIs(t, err, ttl.ErrPermanent, "start %d, CAS %d", tc.start, tc.cas)
		assert.Contains(t, err.Error(), "must fit in an int64")
	}
}
