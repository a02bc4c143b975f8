package discovery

import (
	"fmt"
	"strings"

	"github.com/zkrecipes/zkrecipes/session"
)

// DefaultBasePath is Spring Cloud Zookeeper's root of services (its
// spring.cloud.zookeeper.discovery.root); Curator itself has no default.
const DefaultBasePath = "/services"

// The layout of a registry, as curator-x-discovery's ServiceDiscoveryImpl
// makes it: basePath/<service name>/<instance id>, the instance's JSON as
// the data. Curator creates the parents as containers (the server deletes
// them with their last child).

// ServicePath returns basePath/name, the parent of a service's instances.
// It fails with ErrInvalidArgument on an invalid base path or a name that
// is not one node name.
func ServicePath(basePath, name string) (string, error) {
	if err := session.ValidatePath(basePath); err != nil {
		return "", fmt.Errorf("%w: base path: %v", ErrInvalidArgument, err)
	}
	if err := checkSegment("service name", name); err != nil {
		return "", err
	}
	p := session.JoinPath(basePath, name)
	if err := session.ValidatePath(p); err != nil {
		return "", fmt.Errorf("%w: service name %q: %v", ErrInvalidArgument, name, err)
	}
	return p, nil
}

// InstancePath returns basePath/<inst.Name>/<inst.ID>, the node Curator
// registers inst at (for DynamicSequential the server appends a suffix to
// it).
func InstancePath(basePath string, inst Instance) (string, error) {
	parent, err := ServicePath(basePath, inst.Name)
	if err != nil {
		return "", err
	}
	if err := checkSegment("instance id", inst.ID); err != nil {
		return "", err
	}
	p := session.JoinPath(parent, inst.ID)
	if err := session.ValidatePath(p); err != nil {
		return "", fmt.Errorf("%w: instance id %q: %v", ErrInvalidArgument, inst.ID, err)
	}
	return p, nil
}

// CreateMode returns the mode Curator creates an instance of type t with:
// Dynamic ephemeral, DynamicSequential ephemeral sequential, Static and
// Permanent persistent. Any other type is an ErrInvalidArgument error
// (Curator registers it persistent; a registrant should say what it
// means).
func (t ServiceType) CreateMode() (session.CreateMode, error) {
	switch t {
	case Dynamic:
		return session.Ephemeral, nil
	case DynamicSequential:
		return session.EphemeralSequential, nil
	case Static, Permanent:
		return session.Persistent, nil
	}
	return 0, fmt.Errorf("%w: service type %q (want DYNAMIC, DYNAMIC_SEQUENTIAL, STATIC or PERMANENT)", ErrInvalidArgument, string(t))
}

// IsDynamic reports whether instances of t end with their session
// (Curator's ServiceType.isDynamic).
func (t ServiceType) IsDynamic() bool { return t == Dynamic || t == DynamicSequential }

// checkSegment checks that s can be one node name.
func checkSegment(what, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%w: %s is empty", ErrInvalidArgument, what)
	case strings.Contains(s, "/"):
		return fmt.Errorf("%w: %s %q has a '/' (it names one node)", ErrInvalidArgument, what, s)
	case s == "." || s == "..":
		return fmt.Errorf("%w: %s %q is a relative path segment", ErrInvalidArgument, what, s)
	}
	return nil
}
