package discovery

import (
	"encoding/json"
	"fmt"
)

// SpringCloudClass is the payload class of Spring Cloud Zookeeper's
// registrations (root DefaultBasePath); SpringCloudPayload is its shape.
const SpringCloudClass = "org.springframework.cloud.zookeeper.discovery.ZookeeperInstance"

// SpringCloudPayload is Spring Cloud Zookeeper's ZookeeperInstance: its
// fields in its order, so NewPayload(SpringCloudClass, p) writes what
// Spring Cloud writes (metadata keys sorted; Java's HashMap has an order
// of its own, which no reader depends on).
type SpringCloudPayload struct {
	ID       string            `json:"id"`
	Name     string            `json:"name"`
	Metadata map[string]string `json:"metadata"`
}

// classKey is Jackson's property for the class of a payload
// (JsonTypeInfo.Id.CLASS, as curator-x-discovery annotates getPayload).
const classKey = "@class"

// NewPayload returns v's JSON object as an object payload of the Java
// class class: "@class" first, then v's members as encoding/json orders
// them (struct fields in order, map keys sorted). class is the class a
// Java reader instantiates: it must be on its classpath (e.g.
// SpringCloudClass, or java.util.LinkedHashMap for a plain map). v must
// encode to a JSON object without an "@class" member; otherwise the error
// is ErrInvalidArgument.
func NewPayload(class string, v any) (json.RawMessage, error) {
	if class == "" {
		return nil, fmt.Errorf("%w: payload class is empty", ErrInvalidArgument)
	}
	body, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: payload: %v", ErrInvalidArgument, err)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(body, &members); err != nil || members == nil {
		return nil, fmt.Errorf("%w: payload of class %s: %T is no JSON object", ErrInvalidArgument, class, v)
	}
	if _, ok := members[classKey]; ok {
		return nil, fmt.Errorf("%w: payload of class %s: it has an %q member of its own", ErrInvalidArgument, class, classKey)
	}
	out := appendString([]byte(`{"@class":`), class)
	if len(members) > 0 {
		out = append(out, ',')
		out = append(out, body[1:]...) // the members, then '}'
	} else {
		out = append(out, '}')
	}
	return appendValue(nil, out)
}

// PayloadClass returns the "@class" of the instance's object payload, ""
// when it has none (no payload, or not an object).
func (i Instance) PayloadClass() string {
	var head struct {
		Class string `json:"@class"`
	}
	if json.Unmarshal(i.Payload, &head) != nil {
		return ""
	}
	return head.Class
}

// DecodePayload decodes the payload into v with encoding/json ("@class"
// is ignored unless v has a field for it). With no payload, v is left as
// it is and the error wraps ErrNoPayload.
func (i Instance) DecodePayload(v any) error {
	if i.Payload == nil {
		return fmt.Errorf("%w: instance %q", ErrNoPayload, i.ID)
	}
	if err := json.Unmarshal(i.Payload, v); err != nil {
		return fmt.Errorf("discovery: payload of instance %q: %w", i.ID, err)
	}
	return nil
}

// StringPayload returns s as a Java String payload: a plain JSON string
// (Jackson writes no class for a String), escaped as Jackson escapes it.
func StringPayload(s string) json.RawMessage { return appendString(nil, s) }
