package discovery

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/nodes"
	"github.com/zkrecipes/zkrecipes/session"
)

// abandonTimeout bounds the removal of a node whose registration failed
// or was cancelled before it was in place.
const abandonTimeout = 5 * time.Second

// Registration is an instance this process registered (Register): its
// node is kept in place until Unregister, through connection loss, new
// sessions and deletes by others (package nodes' Persistent does the
// keeping). Registered tells, like a lease, when the instance is
// registered and when it stops being so, and why. Methods are safe for
// concurrent use.
//
// How Curator's known faults are avoided: the node's data is one value,
// replaced by Update, and every re-registration writes that value (an
// instance updated meanwhile is never re-registered stale: CURATOR-146,
// CURATOR-181); one goroutine per registration makes the node at most
// once per session (a node of our own session found in place is taken as
// ours, not deleted and made again) and waits on a backoff between failed
// attempts (no re-registration loop: CURATOR-320); Unregister stops the
// keeping before it deletes the node, so no reconnection brings it back
// (CURATOR-164).
type Registration struct {
	node *nodes.Persistent

	update sync.Mutex // one Update at a time: the node's data is the last one's
	mu     sync.Mutex
	inst   Instance // the latest instance, as Update last set it
}

// Register registers inst under the base path, as Curator's
// registerService does: the node basePath/<Name>/<ID> (DynamicSequential:
// with the server's suffix) in its type's create mode (CreateMode; a type
// "" is Dynamic, Curator's default), its parents made as containers, its
// data inst's JSON (Encode). A zero Registered time is set to now.
//
// It returns once the node is in place. When ctx ends first, or the
// server refuses the node for good (an ACL; the error is then
// nodes.ErrCannotCreate too), nothing stays registered and the error says
// why. A Dynamic instance whose id another session's node holds waits for
// that node to go.
//
// On session loss the instance is not registered until the next trusted
// session registers it again, once, with its latest data: see
// Registration.Registered.
func (d *Discovery) Register(ctx context.Context, inst Instance) (*Registration, error) {
	if ctx == nil {
		return nil, fmt.Errorf("%w: nil context", ErrInvalidArgument)
	}
	if inst.Type == "" {
		inst.Type = Dynamic
	}
	if inst.Registered.IsZero() {
		inst.Registered = time.Now()
	}
	inst.Registered = inst.Registered.Truncate(time.Millisecond).UTC() // as stored and read back
	inst.Node = ""
	path, err := InstancePath(d.base, inst)
	if err != nil {
		return nil, err
	}
	mode, err := inst.Type.CreateMode()
	if err != nil {
		return nil, err
	}
	data, err := inst.Encode()
	if err != nil {
		return nil, err
	}
	n, err := nodes.NewPersistent(d.client, path, mode, data)
	if err != nil {
		return nil, fmt.Errorf("discovery: registering %s: %w", path, err)
	}
	if _, err := n.Placed(ctx); err != nil {
		// Not registered: nothing of it may stay (a create whose reply
		// was lost included).
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abandonTimeout)
		defer cancel()
		return nil, fmt.Errorf("discovery: registering %s: %w", path, errors.Join(err, n.Close(cctx)))
	}
	return &Registration{node: n, inst: inst}, nil
}

// Instance returns the instance as registered, with its latest Update,
// and Node set to its node's name.
func (r *Registration) Instance() Instance {
	r.mu.Lock()
	inst := r.inst
	r.mu.Unlock()
	inst.Node = session.BaseName(r.node.Path())
	return inst
}

// Path is the instance's node (with its suffix, for DynamicSequential).
func (r *Registration) Path() string { return r.node.Path() }

// Registered waits until the instance is registered and returns that
// stretch of registration: its Context ends, with a cause
// (context.Cause, or Err), the moment the instance may no longer be
// registered: session.ErrSuspended (the connection is lost; the session
// may live on), session.ErrSessionLost (the session ended: a Dynamic
// instance is gone with it), nodes.ErrDeleted (another client deleted the
// node; it is made again) or nodes.ErrClosed (Unregister). When the
// instance is back (the same session reconnected, or a new one registered
// it again) a new Placement begins, with the next Generation. After
// Unregister it returns an error that is nodes.ErrClosed; when ctx ends
// first, ctx's error.
func (r *Registration) Registered(ctx context.Context) (*nodes.Placement, error) {
	p, err := r.node.Placed(ctx)
	if err != nil {
		return nil, fmt.Errorf("discovery: %s: %w", r.node.Path(), err)
	}
	return p, nil
}

// Update changes the registered instance, as Curator's updateService: inst
// must have the registration's Name, ID and Type (else an
// ErrInvalidArgument error); a zero Registered time keeps the
// registration's. The new data is written now if the instance is
// registered, else when it is registered again: an update made while
// disconnected is what a new session registers. Update returns once the
// data is on the server; when ctx ends first, the update is kept all the
// same (Instance returns it) and the error says it is not written yet.
// Updates are made one at a time.
func (r *Registration) Update(ctx context.Context, inst Instance) error {
	if ctx == nil {
		return fmt.Errorf("%w: nil context", ErrInvalidArgument)
	}
	r.update.Lock()
	defer r.update.Unlock()
	r.mu.Lock()
	cur := r.inst
	r.mu.Unlock()
	if inst.Type == "" {
		inst.Type = Dynamic
	}
	if inst.Name != cur.Name || inst.ID != cur.ID || inst.Type != cur.Type {
		return fmt.Errorf("%w: update of %s/%s (%s) with instance %s/%s (%s): name, id and type cannot change",
			ErrInvalidArgument, cur.Name, cur.ID, cur.Type, inst.Name, inst.ID, inst.Type)
	}
	if inst.Registered.IsZero() {
		inst.Registered = cur.Registered
	}
	inst.Registered = inst.Registered.Truncate(time.Millisecond).UTC()
	inst.Node = ""
	data, err := inst.Encode()
	if err != nil {
		return err
	}
	err = r.node.SetData(ctx, data)
	if errors.Is(err, nodes.ErrClosed) {
		return fmt.Errorf("discovery: update of %s: %w", r.node.Path(), err)
	}
	r.mu.Lock()
	r.inst = inst
	r.mu.Unlock()
	if err != nil {
		return fmt.Errorf("discovery: update of %s: %w", r.node.Path(), err)
	}
	return nil
}

// Unregister removes the instance, as Curator's unregisterService: it
// stops the keeping first, so that no reconnection registers it again
// (CURATOR-164), then deletes the node, retrying until ctx ends (a
// Dynamic instance is gone with its session anyway). The current
// Placement ends with nodes.ErrClosed. It may be called more than once.
func (r *Registration) Unregister(ctx context.Context) error {
	if err := r.node.Close(ctx); err != nil {
		return fmt.Errorf("discovery: unregistering %s: %w", r.node.Path(), err)
	}
	return nil
}
