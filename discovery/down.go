package discovery

import (
	"sync"
	"time"
)

// Curator's DownInstancePolicy defaults.
const (
	// DefaultDownTimeout is how long an instance reported down is skipped,
	// from its first reported error.
	DefaultDownTimeout = 30 * time.Second
	// DefaultDownThreshold is how many errors make an instance down.
	DefaultDownThreshold = 2
)

// downList is Curator's DownInstanceManager: an instance reported failing
// threshold times within timeout of its first report is down until
// timeout after that first report; then its count starts again. Curator
// purges at most every timeout/2, so an instance may stay down there up to
// 1.5 × timeout; here it is down exactly until its window ends.
type downList struct {
	timeout   time.Duration
	threshold int
	now       func() time.Time

	mu     sync.Mutex
	errors map[string]*downStatus // by instanceKey
}

type downStatus struct {
	first time.Time
	count int
}

func newDownList(timeout time.Duration, threshold int) *downList {
	return &downList{timeout: timeout, threshold: threshold, now: time.Now, errors: map[string]*downStatus{}}
}

// note counts one error of the instance.
func (d *downList) note(in Instance) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	d.purge(now)
	k := instanceKey(in)
	st := d.errors[k]
	if st == nil {
		st = &downStatus{first: now}
		d.errors[k] = st
	}
	st.count++
}

// up reports whether the instance is to be offered.
func (d *downList) up(in Instance) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.purge(d.now())
	st := d.errors[instanceKey(in)]
	return st == nil || st.count < d.threshold
}

// purge forgets the windows that ended, so the map holds only instances
// reported within the last timeout.
func (d *downList) purge(now time.Time) {
	for k, st := range d.errors {
		if now.Sub(st.first) >= d.timeout {
			delete(d.errors, k)
		}
	}
}
