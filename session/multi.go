package session

import (
	"context"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// Op is one operation of a Multi. Build it with CreateOp, SetOp, DeleteOp or
// CheckOp; paths are client paths.
type Op struct {
	kind    opKind
	path    string
	data    []byte
	flags   int32
	version int32
}

type opKind int

const (
	opCreate opKind = iota + 1
	opSet
	opDelete
	opCheck
)

// CreateOp creates path with data and zk flags.
func CreateOp(path string, data []byte, flags int32) Op {
	return Op{kind: opCreate, path: path, data: data, flags: flags}
}

// SetOp writes data to path at version (-1: any).
func SetOp(path string, data []byte, version int32) Op {
	return Op{kind: opSet, path: path, data: data, version: version}
}

// DeleteOp deletes path at version (-1: any).
func DeleteOp(path string, version int32) Op {
	return Op{kind: opDelete, path: path, version: version}
}

// CheckOp requires path to exist at version (-1: any version).
func CheckOp(path string, version int32) Op {
	return Op{kind: opCheck, path: path, version: version}
}

func (c *Client) request(o Op) (any, error) {
	if err := ValidatePath(o.path); err != nil {
		return nil, err
	}
	full := c.cfg.namespace.full(o.path)
	switch o.kind {
	case opCreate:
		return &zk.CreateRequest{Path: full, Data: o.data, Acl: c.cfg.acl, Flags: o.flags}, nil
	case opSet:
		return &zk.SetDataRequest{Path: full, Data: o.data, Version: o.version}, nil
	case opDelete:
		return &zk.DeleteRequest{Path: full, Version: o.version}, nil
	case opCheck:
		return &zk.CheckVersionRequest{Path: full, Version: o.version}, nil
	}
	return nil, invalid("zero Op (build it with CreateOp, SetOp, DeleteOp or CheckOp)")
}

// Multi applies ops atomically: all or none. It is not retried (after a
// connection loss the caller cannot know whether it was applied). On
// failure the error wraps the first failing op's error.
func (c *Client) Multi(ctx context.Context, ops ...Op) ([]zk.MultiResponse, error) {
	if len(ops) == 0 {
		return nil, invalid("Multi with no ops")
	}
	reqs := make([]any, len(ops))
	for i, o := range ops {
		r, err := c.request(o)
		if err != nil {
			return nil, fmt.Errorf("op %d: %w", i, err)
		}
		reqs[i] = r
	}
	if err := c.checkSize("multi", ops[0].path, multiSize(reqs)); err != nil {
		return nil, err
	}
	var res []zk.MultiResponse
	err := c.do(ctx, false, func(conn *zk.Conn) error {
		r, err := conn.Multi(reqs...)
		if err != nil {
			for i, op := range r {
				if op.Error != nil {
					return &MultiError{Index: i, Path: ops[i].path, Err: op.Error}
				}
			}
			return err
		}
		res = r
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("session: multi: %w", err)
	}
	for i := range res {
		res[i].String = c.cfg.namespace.strip(res[i].String)
	}
	return res, nil
}

// MultiError says which op of a failed Multi failed, and why.
type MultiError struct {
	Index int    // the op's position
	Path  string // its path
	Err   error  // the server's error for it
}

func (e *MultiError) Error() string { return fmt.Sprintf("op %d (%s): %v", e.Index, e.Path, e.Err) }
func (e *MultiError) Unwrap() error { return e.Err }
