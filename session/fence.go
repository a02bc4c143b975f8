package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
)

// FencedResource is a znode that stores data together with the highest
// fencing token it has accepted, and refuses a write carrying a lower token:
// the storage-side check of Kleppmann's "How to do distributed locking", kept
// in ZooKeeper. A holder that lost its lock without noticing (a long GC pause,
// a partition) and writes with its old token is refused once a newer holder
// has written. Writes are compare-and-set on the node's version, so two
// writers racing cannot both pass the check.
//
// The node's data is the token in decimal, a newline, then the payload.
type FencedResource struct {
	c    *Client
	path string
}

// maxFenceAttempts bounds the compare-and-set loop of Write under contention.
const maxFenceAttempts = 64

// FencedResource returns the fenced resource at path. No I/O is done.
func (c *Client) FencedResource(path string) (*FencedResource, error) {
	if err := ValidatePath(path); err != nil {
		return nil, err
	}
	if path == "/" {
		return nil, invalid("fenced resource at the root")
	}
	return &FencedResource{c: c, path: path}, nil
}

// Path returns the resource's path.
func (r *FencedResource) Path() string { return r.path }

// Write stores data if token is at least the highest token accepted so far.
// It returns an error that is ErrStaleToken when token is lower.
func (r *FencedResource) Write(ctx context.Context, token int64, data []byte) error {
	if token < 0 {
		return invalid("negative fencing token %d", token)
	}
	value := encodeFenced(token, data)
	for attempt := 0; attempt < maxFenceAttempts; attempt++ {
		seen, _, st, err := r.read(ctx)
		switch {
		case errors.Is(err, ErrNoNode):
			_, err = r.c.Create(ctx, r.path, value, Persistent)
			if errors.Is(err, ErrNodeExists) {
				continue // another writer created it first: compare again
			}
			return err
		case err != nil:
			return err
		case token < seen:
			return fmt.Errorf("%w: %s: token %d is below %d", ErrStaleToken, r.path, token, seen)
		}
		_, err = r.c.Set(ctx, r.path, value, st.Version)
		if errors.Is(err, ErrBadVersion) || errors.Is(err, ErrNoNode) {
			continue // written or deleted meanwhile: compare again
		}
		return err
	}
	return fmt.Errorf("session: fenced write %s: %d compare-and-set attempts lost", r.path, maxFenceAttempts)
}

// Read returns the highest token accepted and the data written with it.
func (r *FencedResource) Read(ctx context.Context) (int64, []byte, error) {
	token, data, _, err := r.read(ctx)
	return token, data, err
}

func (r *FencedResource) read(ctx context.Context) (int64, []byte, *Stat, error) {
	raw, st, err := r.c.Get(ctx, r.path)
	if err != nil {
		return 0, nil, nil, err
	}
	token, data, err := decodeFenced(raw)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("session: fenced resource %s: %w", r.path, err)
	}
	return token, data, st, nil
}

func encodeFenced(token int64, data []byte) []byte {
	out := strconv.AppendInt(make([]byte, 0, 21+len(data)), token, 10)
	out = append(out, '\n')
	return append(out, data...)
}

func decodeFenced(raw []byte) (int64, []byte, error) {
	if len(raw) == 0 {
		return 0, nil, nil // an empty node: nothing accepted yet
	}
	head, data, ok := bytes.Cut(raw, []byte{'\n'})
	if !ok {
		return 0, nil, errors.New("no token header (not written by FencedResource)")
	}
	token, err := strconv.ParseInt(string(head), 10, 64)
	if err != nil || token < 0 {
		return 0, nil, fmt.Errorf("bad token header %q", head)
	}
	return token, data, nil
}
