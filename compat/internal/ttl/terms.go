package ttl

import "time"

// MaxTTL is the longest TTL every TTL lock accepts: 30 days (memcached
// takes a longer expiry as a date, and a waiter's timers are TTL multiples).
const MaxTTL = 30 * 24 * time.Hour

// Terms are how long a holding is trusted and how often it is renewed.
type Terms struct {
	// TTL is how long after the send time of the request that took (or
	// last renewed) the lock the server may keep it at most: a release
	// that could not complete is retried in the background until then.
	TTL time.Duration
	// Valid is how long after the send time of the request that took (or
	// last renewed) the lock the lease is trusted: the TTL less the margin.
	Valid time.Duration
	// Every is how often the watchdog renews.
	Every time.Duration
	// What names the lock in causes ("redislock orders").
	What string
}

// NewTerms are the terms of a lease on a lock of TTL ttl trusted for valid
// after each confirmed request, named what: renewed every third of valid,
// so that two renewals can fail before the lease ends.
func NewTerms(ttl, valid time.Duration, what string) Terms {
	return Terms{TTL: ttl, Valid: valid, Every: valid / 3, What: what}
}
