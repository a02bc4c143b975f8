package ttl

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A Backoff doubles from BackoffBase up to BackoffCap, and starts again
// from BackoffBase after Reset.
func TestBackoff(t *testing.T) {
	var b Backoff
	var got []time.Duration
	for range 8 {
		got = append(got, b.Next())
	}
	ms := time.Millisecond
	assert.Equal(t, []time.Duration{50 * ms, 100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 2000 * ms, 2000 * ms}, got)
	b.Reset()
	assert.Equal(t, BackoffBase, b.Next())
	assert.Equal(t, 2*BackoffBase, b.Next())
}
