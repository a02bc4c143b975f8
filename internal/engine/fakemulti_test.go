package engine

import (
	"fmt"
	"reflect"

	"github.com/zkrecipes/zkrecipes/session"
)

// fakeOpView is what a session.Op holds. Its fields are unexported (the
// client builds requests from them), so the fake reads them by reflection;
// the kinds are learnt from the constructors, not hard-coded.
type fakeOpView struct {
	kind    int64
	path    string
	data    []byte
	mode    session.CreateMode
	version int32
}

var (
	fakeKindCreate = fakeOpKind(session.CreateOp("/", nil, 0))
	fakeKindSet    = fakeOpKind(session.SetOp("/", nil, -1))
	fakeKindDelete = fakeOpKind(session.DeleteOp("/", -1))
	fakeKindCheck  = fakeOpKind(session.CheckOp("/", -1))
)

func fakeOpKind(o session.Op) int64 { return reflect.ValueOf(o).FieldByName("kind").Int() }

func fakeViewOp(o session.Op) fakeOpView {
	v := reflect.ValueOf(o)
	return fakeOpView{
		kind:    v.FieldByName("kind").Int(),
		path:    v.FieldByName("path").String(),
		data:    v.FieldByName("data").Bytes(),
		mode:    session.CreateMode(v.FieldByName("mode").Int()),
		version: int32(v.FieldByName("version").Int()),
	}
}

// multiLocked applies ops in order; the first that fails fails the Multi
// with a *session.MultiError, and fakeServer.apply undoes the others.
func (s *fakeServer) multiLocked(owner int64, ops []session.Op) ([]session.OpResult, error) {
	if len(ops) == 0 {
		return nil, fmt.Errorf("%w: Multi with no ops", session.ErrInvalidArgument)
	}
	res := make([]session.OpResult, len(ops))
	for i, o := range ops {
		op := fakeViewOp(o)
		var err error
		switch op.kind {
		case fakeKindCheck:
			err = s.checkLocked(op.path, op.version)
		case fakeKindCreate:
			res[i].Created, _, err = s.createLocked(owner, op.path, op.data, op.mode)
		case fakeKindSet:
			var st session.Stat
			st, err = s.setLocked(op.path, op.data, op.version)
			res[i].Stat = &st
		case fakeKindDelete:
			err = s.deleteLocked(op.path, op.version)
		default:
			err = fmt.Errorf("%w: op of kind %d", session.ErrInvalidArgument, op.kind)
		}
		if err != nil {
			return nil, &session.MultiError{Index: i, Path: op.path, Err: err}
		}
	}
	return res, nil
}
