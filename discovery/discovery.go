package discovery

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// The errors of package discovery; test them with errors.Is.
var (
	// ErrInvalidArgument: bad input (nil context or client, invalid path
	// or name, option value). It is recipes.ErrInvalidArgument too.
	ErrInvalidArgument = fmt.Errorf("discovery: %w", recipes.ErrInvalidArgument)
	// ErrBadInstance: a node's data is not an instance's JSON.
	ErrBadInstance = errors.New("discovery: not a service instance")
	// ErrNoPayload: the instance has no payload.
	ErrNoPayload = errors.New("discovery: no payload")
	// ErrNoInstance: a Provider has no instance to give (none registered,
	// or every one filtered out or down).
	ErrNoInstance = errors.New("discovery: no instance")
	// ErrClosed: the ServiceCache was closed (Close, the end of its
	// context, or the client's Close) before it was initialised.
	ErrClosed = errors.New("discovery: closed")
)

// Discovery finds the services registered under a base path by
// curator-x-discovery (Spring Cloud Zookeeper, Dubbo, Druid, ...) or by
// this package. Its methods are safe for concurrent use.
type Discovery struct {
	client *session.Client
	base   string
}

// Option configures New.
type Option func(*Discovery) error

// WithBasePath sets the registry's root (default DefaultBasePath,
// Spring Cloud's).
func WithBasePath(p string) Option {
	return func(d *Discovery) error {
		if err := session.ValidatePath(p); err != nil {
			return fmt.Errorf("%w: base path: %v", ErrInvalidArgument, err)
		}
		d.base = p
		return nil
	}
}

// New returns a Discovery of the registry under the base path on client.
// It does no I/O; bad input is an ErrInvalidArgument error.
func New(client *session.Client, opts ...Option) (*Discovery, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: nil client", ErrInvalidArgument)
	}
	d := &Discovery{client: client, base: DefaultBasePath}
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: nil option", ErrInvalidArgument)
		}
		if err := o(d); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// BasePath is the registry's root.
func (d *Discovery) BasePath() string { return d.base }

// Names returns the sorted names of the services under the base path (one
// request; Curator's queryForNames). No base path is no services: an
// empty answer, not an error. On a lost connection it fails with the
// session's error after the client's retries.
func (d *Discovery) Names(ctx context.Context) ([]string, error) {
	if ctx == nil {
		return nil, fmt.Errorf("%w: nil context", ErrInvalidArgument)
	}
	names, _, err := d.client.Children(ctx, d.base)
	if errors.Is(err, session.ErrNoNode) {
		return []string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("discovery: names under %s: %w", d.base, err)
	}
	slices.Sort(names)
	return names, nil
}

// Node is one instance node as stored: its name under the service and its
// data.
type Node struct {
	Name string
	Data []byte
}

// Nodes reads the nodes of a service, sorted by name: the list, then each
// node's data (one request each, as Curator's queryForInstances). A node
// deleted between the list and its read is left out; a service with no
// node is an empty answer, not an error.
func (d *Discovery) Nodes(ctx context.Context, name string) ([]Node, error) {
	if ctx == nil {
		return nil, fmt.Errorf("%w: nil context", ErrInvalidArgument)
	}
	parent, err := ServicePath(d.base, name)
	if err != nil {
		return nil, err
	}
	kids, _, err := d.client.Children(ctx, parent)
	if errors.Is(err, session.ErrNoNode) {
		return []Node{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("discovery: instances of %s: %w", name, err)
	}
	slices.Sort(kids)
	nodes := make([]Node, 0, len(kids))
	for _, k := range kids {
		data, _, err := d.client.Get(ctx, session.JoinPath(parent, k))
		if errors.Is(err, session.ErrNoNode) {
			continue // unregistered meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("discovery: instance %s of %s: %w", k, name, err)
		}
		nodes = append(nodes, Node{Name: k, Data: data})
	}
	return nodes, nil
}

// Instances returns the instances of a service read now from the server
// (Curator's queryForInstances), sorted by node name, each with its Node
// set; a service with no instance is an empty answer. A node whose data is
// no instance is left out, and the error (wrapping ErrBadInstance) names
// it beside the instances that were read. For repeated reads, use a
// ServiceCache: it answers without requests.
func (d *Discovery) Instances(ctx context.Context, name string) ([]Instance, error) {
	nodes, err := d.Nodes(ctx, name)
	if err != nil {
		return nil, err
	}
	out := make([]Instance, 0, len(nodes))
	var bad []error
	for _, n := range nodes {
		inst, err := Decode(n.Data)
		if err != nil {
			bad = append(bad, fmt.Errorf("node %s of %s: %w", n.Name, name, err))
			continue
		}
		inst.Node = n.Name
		out = append(out, inst)
	}
	return out, errors.Join(bad...)
}
