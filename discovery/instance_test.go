package discovery_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/session"
)

// Fields a newer writer adds are ignored, never an error; an absent
// serviceType is DYNAMIC (Curator's default), a null one "".
func TestDecodeTolerates(t *testing.T) {
	inst, err := discovery.Decode([]byte(`{"name":"s","id":"i","future":{"x":[1,2]},"port":7,"payload":{"@class":"a.B","k":"v","extra":1}}`))
	require.NoError(t, err)
	require.Equal(t, discovery.Dynamic, inst.Type)
	require.Equal(t, 7, *inst.Port)
	require.Equal(t, "a.B", inst.PayloadClass())
	var m map[string]any
	require.NoError(t, inst.DecodePayload(&m))
	require.Equal(t, "v", m["k"])

	inst, err = discovery.Decode([]byte(`{"name":"s","id":"i","serviceType":null,"payload":null}`))
	require.NoError(t, err)
	require.Equal(t, discovery.ServiceType(""), inst.Type)
	require.Nil(t, inst.Payload)
	require.ErrorIs(t, inst.DecodePayload(&m), discovery.ErrNoPayload)

	for _, bad := range []string{``, `[]`, `{"name":`, `{"port":"x"}`, `{} {}`, `null`, ` null `, `{"name":"s","id":"i"}}`} {
		_, err := discovery.Decode([]byte(bad))
		require.ErrorIs(t, err, discovery.ErrBadInstance, bad)
	}
}

// A Spring Cloud payload read back is the payload written, metadata
// included.
func TestSpringCloudPayload(t *testing.T) {
	want := discovery.SpringCloudPayload{ID: "a-1", Name: "a", Metadata: map[string]string{"zone": "z", "instance_status": "UP"}}
	p, err := discovery.NewPayload(discovery.SpringCloudClass, want)
	require.NoError(t, err)
	require.Equal(t, `{"@class":"`+discovery.SpringCloudClass+`","id":"a-1","name":"a","metadata":{"instance_status":"UP","zone":"z"}}`, string(p))
	inst := discovery.Instance{Name: "a", ID: "a-1", Payload: p}
	require.Equal(t, discovery.SpringCloudClass, inst.PayloadClass())
	var got discovery.SpringCloudPayload
	require.NoError(t, inst.DecodePayload(&got))
	require.Equal(t, want, got)
}

func TestBadInput(t *testing.T) {
	for _, err := range []error{
		func() error { _, err := discovery.NewPayload("", struct{}{}); return err }(),
		func() error { _, err := discovery.NewPayload("c", "a string"); return err }(),
		func() error { _, err := discovery.NewPayload("c", map[string]int{"@class": 1}); return err }(),
		func() error { _, err := discovery.Instance{ID: "i"}.Encode(); return err }(),
		func() error { _, err := discovery.Instance{Name: "a/b", ID: "i"}.Encode(); return err }(),
		func() error {
			_, err := discovery.Instance{Name: "a", ID: "i", Payload: json.RawMessage(`{`)}.Encode()
			return err
		}(),
		func() error { _, err := discovery.ServicePath("rel", "a"); return err }(),
		func() error {
			_, err := discovery.InstancePath("/s", discovery.Instance{Name: "a", ID: ".."})
			return err
		}(),
		func() error { _, err := discovery.ServiceType("ODD").CreateMode(); return err }(),
		func() error { _, err := discovery.New(nil); return err }(),
		func() error { _, err := discovery.NewProvider(nil); return err }(),
		func() error {
			_, err := discovery.NewProvider(fixedSource{}, discovery.WithStrategy(discovery.Sticky(nil)))
			return err
		}(),
		func() error {
			_, err := discovery.NewProvider(fixedSource{}, discovery.WithStrategy(discovery.Sticky(discovery.Sticky(nil))))
			return err
		}(),
	} {
		require.ErrorIs(t, err, discovery.ErrInvalidArgument)
	}
}

func TestLayout(t *testing.T) {
	p, err := discovery.InstancePath(discovery.DefaultBasePath, discovery.Instance{Name: "orders", ID: "i-1"})
	require.NoError(t, err)
	require.Equal(t, "/services/orders/i-1", p)
	for typ, mode := range map[discovery.ServiceType]session.CreateMode{
		discovery.Dynamic: session.Ephemeral, discovery.DynamicSequential: session.EphemeralSequential,
		discovery.Static: session.Persistent, discovery.Permanent: session.Persistent,
	} {
		got, err := typ.CreateMode()
		require.NoError(t, err)
		require.Equal(t, mode, got, typ)
	}
}

// fixedSource is a Source of no instance, already loaded.
type fixedSource struct{}

func (fixedSource) Initialized(context.Context) error { return nil }
func (fixedSource) Instances() []discovery.Instance   { return nil }
