package discovery_test

import (
	"context"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/session"
)

func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := session.Connect(ctx, zktest.SharedForExample(), session.WithLogger(nil))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	// What a Spring Cloud service registers (here written by hand, as a
	// registration does).
	payload, _ := discovery.NewPayload(discovery.SpringCloudClass,
		discovery.SpringCloudPayload{ID: "orders-1", Name: "orders", Metadata: map[string]string{"zone": "eu"}})
	spec, _ := discovery.ParseURISpec("{scheme}://{address}:{port}")
	inst := discovery.Instance{Name: "orders", ID: "orders-1", Address: "10.0.0.5", Port: new(8080),
		Payload: payload, Type: discovery.Dynamic, URISpec: spec}
	path, _ := discovery.InstancePath("/example-services", inst)
	data, _ := inst.Encode()
	mode, _ := inst.Type.CreateMode()
	_ = client.EnsurePath(ctx, "/example-services/orders")
	_, _ = client.Create(ctx, path, data, mode)

	d, _ := discovery.New(client, discovery.WithBasePath("/example-services"))
	names, _ := d.Names(ctx)
	fmt.Println(names)

	sc, err := d.Cache(ctx, "orders")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sc.Close()
	p, _ := discovery.NewProvider(sc, discovery.WithStrategy(discovery.RoundRobin()))
	got, err := p.Instance(ctx) // waits for the cache's first load
	if err != nil {
		fmt.Println(err)
		return
	}
	var sp discovery.SpringCloudPayload
	_ = got.DecodePayload(&sp)
	fmt.Println(got.ID, got.URISpec.Build(got, nil), got.PayloadClass() == discovery.SpringCloudClass, sp.Metadata["zone"])
	// Output:
	// [orders]
	// orders-1 http://10.0.0.5:8080 true eu
}
