package discovery_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/discovery"
)

// ParseURISpec splits as Curator's UriSpec(String) and Build fills in as
// its build(instance, variables).
func TestURISpec(t *testing.T) {
	inst := discovery.Instance{Name: "orders", ID: "i1", Address: "10.0.0.5", Port: new(80),
		Registered: registered, Type: discovery.DynamicSequential}
	ssl := inst
	ssl.SSLPort = new(443)
	for _, c := range []struct {
		spec string
		inst discovery.Instance
		vars map[string]string
		want string
	}{
		{"{scheme}://{address}:{port}", inst, nil, "http://10.0.0.5:80"},
		{"{scheme}://{address}:{ssl-port}", ssl, nil, "https://10.0.0.5:443"},
		{"{ scheme }://{name}/{id}", inst, nil, "http://orders/i1"},        // names trimmed
		{"{scheme}://{address}:{ssl-port}", inst, nil, "http://10.0.0.5:"}, // no SSL port: ""
		{"/{[}{service-type}{]}/{registration-time-utc}", inst, nil, "/{dynamic_sequential}/1764320000123"},
		{"{scheme}://{host}/{unknown}", inst, map[string]string{"host": "h"}, "http://h/"}, // unknown: nothing
		{"{scheme}://{address}", inst, map[string]string{"address": "over", "scheme": "x"}, "x://over"},
		{"plain", inst, nil, "plain"},
		{"", inst, nil, ""},
	} {
		s, err := discovery.ParseURISpec(c.spec)
		require.NoError(t, err, c.spec)
		require.Equal(t, c.want, s.Build(c.inst, c.vars), c.spec)
		back, err := discovery.ParseURISpec(s.String())
		require.NoError(t, err, c.spec)
		require.Equal(t, s.Build(c.inst, c.vars), back.Build(c.inst, c.vars), "String of %q", c.spec)
	}
	var none *discovery.URISpec
	require.Equal(t, "", none.Build(inst, nil))
}

func TestURISpecErrors(t *testing.T) {
	for _, bad := range []string{"{a{b}}", "a}", "{open", "x{y"} {
		_, err := discovery.ParseURISpec(bad)
		require.ErrorIs(t, err, discovery.ErrInvalidArgument, bad)
	}
}
