package discovery

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// ServiceType is an instance's kind, as curator-x-discovery's ServiceType:
// it decides the node's create mode (CreateMode).
type ServiceType string

// The service types of curator-x-discovery 5.x.
const (
	// Dynamic: an ephemeral node named by the instance's ID, gone with
	// the registering session (Curator's default).
	Dynamic ServiceType = "DYNAMIC"
	// DynamicSequential: an ephemeral sequential node, the ID plus the
	// server's ten-digit suffix.
	DynamicSequential ServiceType = "DYNAMIC_SEQUENTIAL"
	// Static: a persistent node, for instances registered by hand.
	Static ServiceType = "STATIC"
	// Permanent: a persistent node that stays after its registrant ends.
	Permanent ServiceType = "PERMANENT"
)

// Instance is one registered instance of a service, the ServiceInstance
// of curator-x-discovery, as stored at basePath/<Name>/<ID>. Encode writes
// it as Curator's JsonInstanceSerializer does by default; Decode reads
// what any version of it wrote.
type Instance struct {
	// Name is the service's name: a node name (no '/').
	Name string
	// ID tells the instance from the others of its service: a node name.
	ID string
	// Address is the host or IP others reach it at; "" is written null
	// (as Curator's builder leaves it on a host without an address).
	Address string
	// Port and SSLPort are its ports; nil is written null (set one with
	// new(8080)).
	Port, SSLPort *int
	// Payload is the payload's JSON as stored, nil for none (written
	// null). An object payload starts with "@class", the Java class a
	// Curator reader instantiates (NewPayload builds one); a Java String
	// payload is a plain JSON string. Encode writes it with Jackson's
	// escaping, members in the order given.
	Payload json.RawMessage
	// Registered is registrationTimeUTC, to the millisecond; the zero
	// time is written 0.
	Registered time.Time
	// Type is the service type; "" is written null. A type unknown to this
	// package (from a newer writer) is kept as read.
	Type ServiceType
	// URISpec is the template of the instance's URI (nil: written null).
	URISpec *URISpec
	// Enabled is written only when not nil: Curator's default serializer
	// (its "compatible" mode) neither writes nor needs it, and readers
	// before Curator 2.9 fail on it. A reader takes an absent one as
	// enabled; a Provider skips instances whose Enabled is false.
	Enabled *bool

	// Node is the name of the node the instance was read from (for
	// DynamicSequential, the ID and the server's suffix); "" for an
	// instance not read from ZooKeeper. It is not encoded.
	Node string
}

// Encode returns the instance's JSON, byte for byte what Curator 5.x's
// JsonInstanceSerializer writes for the same ServiceInstance in its
// default (compatible) mode: the fields name, id, address, port, sslPort,
// payload, registrationTimeUTC, serviceType, uriSpec in that order, and
// enabled after them only when Enabled is set (Curator's full mode).
func (i Instance) Encode() ([]byte, error) {
	if err := checkSegment("name", i.Name); err != nil {
		return nil, err
	}
	if err := checkSegment("id", i.ID); err != nil {
		return nil, err
	}
	b := make([]byte, 0, 256+len(i.Payload))
	b = append(b, `{"name":`...)
	b = appendString(b, i.Name)
	b = append(b, `,"id":`...)
	b = appendString(b, i.ID)
	b = append(b, `,"address":`...)
	b = appendNullString(b, i.Address)
	b = append(b, `,"port":`...)
	b = appendPort(b, i.Port)
	b = append(b, `,"sslPort":`...)
	b = appendPort(b, i.SSLPort)
	b = append(b, `,"payload":`...)
	if i.Payload == nil {
		b = append(b, "null"...)
	} else {
		var err error
		if b, err = appendValue(b, i.Payload); err != nil {
			return nil, fmt.Errorf("%w: instance %q: payload: %v", ErrInvalidArgument, i.ID, err)
		}
	}
	b = append(b, `,"registrationTimeUTC":`...)
	var ms int64
	if !i.Registered.IsZero() {
		ms = i.Registered.UnixMilli()
	}
	b = strconv.AppendInt(b, ms, 10)
	b = append(b, `,"serviceType":`...)
	b = appendNullString(b, string(i.Type))
	b = append(b, `,"uriSpec":`...)
	b = i.URISpec.appendJSON(b)
	if i.Enabled != nil {
		b = append(b, `,"enabled":`...)
		b = strconv.AppendBool(b, *i.Enabled)
	}
	return append(b, '}'), nil
}

func appendNullString(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return appendString(b, s)
}

func appendPort(b []byte, p *int) []byte {
	if p == nil {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, int64(*p), 10)
}

// wireInstance is the JSON as read. Fields it does not name (from newer
// writers) are ignored, as Curator's reader ignores them.
type wireInstance struct {
	Name                string          `json:"name"`
	ID                  string          `json:"id"`
	Address             *string         `json:"address"`
	Port                *int            `json:"port"`
	SSLPort             *int            `json:"sslPort"`
	Payload             json.RawMessage `json:"payload"`
	RegistrationTimeUTC int64           `json:"registrationTimeUTC"`
	ServiceType         present         `json:"serviceType"`
	URISpec             *URISpec        `json:"uriSpec"`
	Enabled             *bool           `json:"enabled"`
}

// Decode reads an instance as any curator-x-discovery writer stores it
// (and as Encode writes it). Unknown fields are ignored. An absent
// serviceType is Dynamic, as in Curator's reader; an explicit null is "".
// The error wraps ErrBadInstance when data is no JSON object of an
// instance.
func Decode(data []byte) (Instance, error) {
	var w wireInstance
	// encoding/json reads null into a struct as nothing at all: only an
	// object is an instance.
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return Instance{}, fmt.Errorf("%w: not a JSON object", ErrBadInstance)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&w); err != nil {
		return Instance{}, fmt.Errorf("%w: %v", ErrBadInstance, err)
	}
	// Anything after the object, a stray '}' included (which dec.More
	// does not see), is not one instance.
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Instance{}, fmt.Errorf("%w: more data after the instance's object", ErrBadInstance)
	}
	i := Instance{Name: w.Name, ID: w.ID, Port: w.Port, SSLPort: w.SSLPort, URISpec: w.URISpec, Enabled: w.Enabled}
	if w.Address != nil {
		i.Address = *w.Address
	}
	if len(w.Payload) > 0 && string(w.Payload) != "null" {
		i.Payload = bytes.Clone(w.Payload)
	}
	if w.RegistrationTimeUTC != 0 {
		i.Registered = time.UnixMilli(w.RegistrationTimeUTC).UTC()
	}
	switch {
	case !w.ServiceType.set:
		i.Type = Dynamic // the default of Curator's ServiceInstance
	case !w.ServiceType.null:
		i.Type = ServiceType(w.ServiceType.s)
	}
	return i, nil
}

// present is a string field that tells absent (set false) from null.
type present struct {
	set, null bool
	s         string
}

// UnmarshalJSON is called for a field that is there, null included.
func (p *present) UnmarshalJSON(b []byte) error {
	p.set = true
	if string(b) == "null" {
		p.null = true
		return nil
	}
	return json.Unmarshal(b, &p.s)
}
