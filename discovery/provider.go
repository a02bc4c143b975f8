package discovery

import (
	"context"
	"fmt"
	"time"
)

// Source is where a Provider takes its instances from: a ServiceCache,
// or anything that answers without blocking.
type Source interface {
	// Initialized waits until Instances is meaningful (a ServiceCache's
	// first load), or ctx ends.
	Initialized(ctx context.Context) error
	// Instances returns the current instances.
	Instances() []Instance
}

// Provider is curator-x-discovery's ServiceProvider: one instance of a
// service at a time, picked by a Strategy among those of its Source that
// pass its filters, are enabled, and are not down. Its methods are safe
// for concurrent use.
//
// Session loss: a Provider reads its Source only; a ServiceCache keeps
// offering its last instances while the connection is suspended (its
// Freshness tells since when), so Instance may return an instance that
// was unregistered meanwhile: report its failures with NoteError.
type Provider struct {
	src      Source
	strategy Strategy
	filters  []func(Instance) bool
	down     *downList
}

// ProviderOption configures NewProvider.
type ProviderOption func(*Provider) error

// WithStrategy sets how an instance is picked (default RoundRobin, as
// Curator's).
func WithStrategy(s Strategy) ProviderOption {
	return func(p *Provider) error {
		if err := checkStrategy(s); err != nil {
			return err
		}
		p.strategy = s
		return nil
	}
}

// WithFilter offers only the instances for which keep returns true
// (Curator's InstanceFilter); filters add up. keep must not block.
func WithFilter(keep func(Instance) bool) ProviderOption {
	return func(p *Provider) error {
		if keep == nil {
			return fmt.Errorf("%w: nil filter", ErrInvalidArgument)
		}
		p.filters = append(p.filters, keep)
		return nil
	}
}

// WithDownPolicy sets Curator's DownInstancePolicy: an instance reported
// (NoteError) threshold times within timeout of its first report is not
// offered until timeout after that first report. Default
// DefaultDownTimeout and DefaultDownThreshold.
func WithDownPolicy(timeout time.Duration, threshold int) ProviderOption {
	return func(p *Provider) error {
		if timeout <= 0 || threshold < 1 {
			return fmt.Errorf("%w: down policy %v, %d errors (want a positive timeout and at least 1 error)", ErrInvalidArgument, timeout, threshold)
		}
		p.down = newDownList(timeout, threshold)
		return nil
	}
}

// NewProvider returns a Provider of src's instances. It does no I/O; bad
// input is an ErrInvalidArgument error.
func NewProvider(src Source, opts ...ProviderOption) (*Provider, error) {
	if src == nil {
		return nil, fmt.Errorf("%w: nil source", ErrInvalidArgument)
	}
	p := &Provider{src: src, strategy: RoundRobin(), down: newDownList(DefaultDownTimeout, DefaultDownThreshold)}
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: nil option", ErrInvalidArgument)
		}
		if err := o(p); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Instance waits for the Source's first load (or ctx), then returns the
// instance the strategy picks among All. With none to offer, it returns
// ErrNoInstance; that is an answer, not a fault: ask again later.
func (p *Provider) Instance(ctx context.Context) (Instance, error) {
	all, err := p.All(ctx)
	if err != nil {
		return Instance{}, err
	}
	if len(all) == 0 {
		return Instance{}, ErrNoInstance
	}
	return p.strategy.Pick(all), nil
}

// All waits for the Source's first load (or ctx), then returns the
// instances on offer: those that pass every filter, are not disabled
// (Enabled false) and are not down. None is an empty answer; a Source
// that cannot load (a ServiceCache of a service whose node refuses this
// client the read) is its Initialized's error.
func (p *Provider) All(ctx context.Context) ([]Instance, error) {
	if ctx == nil {
		return nil, fmt.Errorf("%w: nil context", ErrInvalidArgument)
	}
	if err := p.src.Initialized(ctx); err != nil {
		return nil, err
	}
	return p.offered(p.src.Instances()), nil
}

// offered keeps the instances that pass the filters, the enabled flag and
// the down list.
func (p *Provider) offered(all []Instance) []Instance {
	out := all[:0:0]
next:
	for _, in := range all {
		if in.Enabled != nil && !*in.Enabled {
			continue
		}
		for _, keep := range p.filters {
			if !keep(in) {
				continue next
			}
		}
		if p.down.up(in) {
			out = append(out, in)
		}
	}
	return out
}

// NoteError reports that in failed (Curator's noteError): past the down
// policy's threshold within its timeout, in is not offered for a while.
func (p *Provider) NoteError(in Instance) { p.down.note(in) }
