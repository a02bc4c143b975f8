package recipes

import "fmt"

// QueueOption configures a lock built on the queue engine (mutex.New,
// rwlock.New); those packages alias it as their Option.
type QueueOption func(*QueueConfig)

// QueueConfig is what QueueOptions set.
type QueueConfig struct {
	// Data is stored in every node the lock creates (Curator stores the
	// participant id there). Default: none.
	Data []byte
	// Lookahead: see LeaseDriver.Lookahead. Default: off.
	Lookahead bool
}

// WithData sets QueueConfig.Data.
func WithData(data []byte) QueueOption { return func(c *QueueConfig) { c.Data = data } }

// WithLookahead sets QueueConfig.Lookahead.
func WithLookahead() QueueOption { return func(c *QueueConfig) { c.Lookahead = true } }

// ApplyQueueOptions applies opts in order; a nil one is ErrInvalidArgument.
func ApplyQueueOptions(opts []QueueOption) (QueueConfig, error) {
	var cfg QueueConfig
	for _, o := range opts {
		if o == nil {
			return QueueConfig{}, fmt.Errorf("%w: nil Option", ErrInvalidArgument)
		}
		o(&cfg)
	}
	return cfg, nil
}
