package tracetest

import (
	"sync/atomic"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
)

// timeEnds returns a copy of tr whose LeaseEnd also notes when it was
// called, and what gives the time of its last call (zero before any).
func timeEnds(tr *locktrace.Trace) (*locktrace.Trace, func() time.Time) {
	var at atomic.Pointer[time.Time]
	timed := *tr
	timed.LeaseEnd = func(i locktrace.LeaseEndInfo) {
		now := time.Now()
		at.Store(&now)
		tr.LeaseEnd(i)
	}
	return &timed, func() time.Time {
		if p := at.Load(); p != nil {
			return *p
		}
		return time.Time{}
	}
}
