package ttl

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Wait returns once every clean-up has returned; with none it returns at
// once.
func TestPendingWaitsForCleanups(t *testing.T) {
	var p Pending
	require.NoError(t, p.Wait(context.Background()), "nothing ran")
	release := make(chan struct{})
	finished := make(chan struct{}, 2)
	for range 2 {
		p.Go(context.Background(), func(ctx context.Context) {
			<-release
			finished <- struct{}{}
		})
	}
	waited := make(chan error, 1)
	go func() { waited <- p.Wait(context.Background()) }()
	select {
	case <-waited:
		t.Fatal("Wait returned while clean-ups ran")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	require.NoError(t, <-waited)
	assert.Len(t, finished, 2, "both clean-ups had returned")
}

// When Wait's context ends first, the clean-ups' contexts end, Wait waits
// for them to return and says how many it stopped; a clean-up started
// after that is stopped from its start.
func TestPendingWaitStops(t *testing.T) {
	var p Pending
	type key struct{}
	base := context.WithValue(context.Background(), key{}, "v")
	sawValue := make(chan any, 1)
	p.Go(base, func(ctx context.Context) {
		sawValue <- ctx.Value(key{})
		<-ctx.Done()
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := p.Wait(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "1 clean-up(s) stopped")
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, "v", <-sawValue, "a clean-up's context carries base's values")

	ended := make(chan error, 1)
	p.Go(context.Background(), func(ctx context.Context) {
		<-ctx.Done()
		ended <- ctx.Err()
	})
	assert.ErrorIs(t, <-ended, context.Canceled, "stopped from its start once a Wait gave up")
	require.NoError(t, p.Wait(context.Background()))
}

// The base context's cancellation does not reach a clean-up: a release in
// the background outlives the Acquire or Release call that started it.
func TestPendingOutlivesBase(t *testing.T) {
	var p Pending
	base, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	p.Go(base, func(ctx context.Context) {
		cancel()
		select {
		case <-ctx.Done():
			got <- ctx.Err()
		case <-time.After(20 * time.Millisecond):
			got <- nil
		}
	})
	assert.NoError(t, <-got)
	require.NoError(t, p.Wait(context.Background()))
}
