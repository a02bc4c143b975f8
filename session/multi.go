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
	mode    CreateMode
	version int32
}

type opKind int

const (
	opCreate opKind = iota + 1
	opSet
	opDelete
	opCheck
)

// CreateOp creates path with data as a node of the given mode.
func CreateOp(path string, data []byte, mode CreateMode) Op {
	return Op{kind: opCreate, path: path, data: data, mode: mode}
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
		flags, err := o.mode.flags()
		if err != nil {
			return nil, err
		}
		return &zk.CreateRequest{Path: full, Data: o.data, Acl: c.cfg.acl, Flags: flags}, nil
	case opSet:
		return &zk.SetDataRequest{Path: full, Data: o.data, Version: o.version}, nil
	case opDelete:
		return &zk.DeleteRequest{Path: full, Version: o.version}, nil
	case opCheck:
		return &zk.CheckVersionRequest{Path: full, Version: o.version}, nil
	}
	return nil, invalid("zero Op (build it with CreateOp, SetOp, DeleteOp or CheckOp)")
}

// OpResult is what one op of a successful Multi returned.
type OpResult struct {
	// Created is the path a CreateOp created (with its sequence number,
	// without the namespace); "" for the other ops.
	Created string
	// Stat is the node's Stat after a SetOp; nil for the other ops.
	Stat *Stat
}

// Multi applies ops atomically: all or none, and returns one result per
// op. It is not retried (after a connection loss the caller cannot know
// whether it was applied). On failure the error wraps the first failing
// op's error (a *MultiError says which).
func (c *Client) Multi(ctx context.Context, ops ...Op) ([]OpResult, error) {
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
	if len(res) != len(ops) {
		return nil, fmt.Errorf("session: multi of %d ops answered with %d results", len(ops), len(res))
	}
	out := make([]OpResult, len(res))
	for i, r := range res {
		out[i].Stat = statOf(r.Stat)
		if ops[i].kind == opCreate {
			out[i].Created = c.cfg.namespace.strip(r.String)
		}
	}
	return out, nil
}

// MultiError says which op of a failed Multi failed, and why.
type MultiError struct {
	Index int    // the op's position
	Path  string // its path
	Err   error  // the server's error for it
}

func (e *MultiError) Error() string { return fmt.Sprintf("op %d (%s): %v", e.Index, e.Path, e.Err) }
func (e *MultiError) Unwrap() error { return e.Err }
