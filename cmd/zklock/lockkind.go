package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/leader"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphore"
	"github.com/zkrecipes/zkrecipes/session"
)

// lockKind is which lock zklock takes at PATH.
type lockKind int

const (
	kindMutex     lockKind = iota // the default: mutex.Mutex (Curator's InterProcessMutex)
	kindRead                      // --read: the shared half of rwlock.RWLock
	kindWrite                     // --write: the exclusive half of rwlock.RWLock
	kindExclusive                 // --exclusive: exclusive.Lock (one node PATH/lock)
	kindLeader                    // --leader: leadership of the election at PATH (Curator's LeaderLatch)
	kindSemaphore                 // --semaphore N: one of N leases (Curator's InterProcessSemaphoreV2)
)

// String is the kind as ls's KIND column shows it.
func (k lockKind) String() string {
	switch k {
	case kindRead:
		return "read"
	case kindWrite:
		return "write"
	case kindExclusive:
		return "exclusive"
	case kindLeader:
		return "leader"
	case kindSemaphore:
		return "semaphore"
	default:
		return "mutex"
	}
}

// noSemaphore is --semaphore's value when it is not given.
const noSemaphore = -1

// kindFlags are --read, --write, --exclusive, --leader and --semaphore.
type kindFlags struct {
	read, write, exclusive, leader bool
	semaphore                      int
}

func (f *kindFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.read, "read", false, "take the read half of the read/write lock")
	fs.BoolVar(&f.write, "write", false, "take the write half of the read/write lock")
	fs.BoolVar(&f.exclusive, "exclusive", false, "take the herd-style exclusive lock")
	fs.BoolVar(&f.leader, "leader", false, "lead the election at PATH")
	fs.IntVar(&f.semaphore, "semaphore", noSemaphore, "hold one of N leases of the semaphore at PATH")
}

// kind is the lock the flags ask for; more than one of them is a usage
// error naming them.
func (f *kindFlags) kind() (lockKind, error) {
	var set []string
	k := kindMutex
	if f.read {
		set, k = append(set, "--read"), kindRead
	}
	if f.write {
		set, k = append(set, "--write"), kindWrite
	}
	if f.exclusive {
		set, k = append(set, "--exclusive"), kindExclusive
	}
	if f.leader {
		set, k = append(set, "--leader"), kindLeader
	}
	if f.semaphore != noSemaphore {
		if f.semaphore < 1 {
			return kindMutex, fmt.Errorf("--semaphore %d: at least 1 lease", f.semaphore)
		}
		set, k = append(set, "--semaphore"), kindSemaphore
	}
	if err := notTogether(set); err != nil {
		return kindMutex, err
	}
	return k, nil
}

// notTogether is the usage error for more than one of the exclusive flags
// given ("--a, --b and --c cannot be used together"); nil for one or none.
func notTogether(given []string) error {
	if len(given) < 2 {
		return nil
	}
	last := len(given) - 1
	return errors.New(strings.Join(given[:last], ", ") + " and " + given[last] + " cannot be used together")
}

// newLocker returns the lock of kind k at path, storing data in its node
// (for a semaphore, of maxLeases). No I/O is done.
func newLocker(c *session.Client, path string, k lockKind, data []byte, maxLeases int) (recipes.Locker, error) {
	switch k {
	case kindLeader:
		e, err := leader.NewLatch(c, path, string(data))
		if err != nil {
			return nil, err
		}
		return e, nil
	case kindSemaphore:
		s, err := semaphore.New(c, path, maxLeases, semaphore.WithData(data))
		if err != nil {
			return nil, err
		}
		return s.Locker(1), nil
	case kindRead, kindWrite:
		rw, err := rwlock.New(c, path, rwlock.WithData(data))
		if err != nil {
			return nil, err
		}
		if k == kindRead {
			return rw.ReadLock(), nil
		}
		return rw.WriteLock(), nil
	case kindExclusive:
		l, err := exclusive.New(c, path, exclusive.WithData(data))
		if err != nil {
			return nil, err
		}
		return l, nil
	default:
		m, err := mutex.New(c, path, mutex.WithData(data))
		if err != nil {
			return nil, err
		}
		return m, nil
	}
}
