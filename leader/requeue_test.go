package leader

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestRequeuePause(t *testing.T) {
	for _, tc := range []struct {
		name       string
		prev, held time.Duration
		want       time.Duration
	}{
		{"a long term: at once", 0, ShortTerm, 0},
		{"a long term resets the pause", MaxRequeueBackoff, time.Hour, 0},
		{"the first short term", 0, 0, RequeueBackoff},
		{"short terms in a row double it", RequeueBackoff, time.Millisecond, 2 * RequeueBackoff},
		{"up to the cap", MaxRequeueBackoff * 3 / 4, 0, MaxRequeueBackoff},
		{"and no further", MaxRequeueBackoff, 0, MaxRequeueBackoff},
	} {
		assert.Equal(t, tc.want, requeuePause(tc.prev, tc.held), tc.name)
	}
}
