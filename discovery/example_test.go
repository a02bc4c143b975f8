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

// Register keeps an instance registered until Unregister, through
// connection loss and new sessions; Registered tells when it is and, by
// its context's end and cause, when it stops being so.
func ExampleDiscovery_Register() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := session.Connect(ctx, zktest.SharedForExample(), session.WithLogger(nil))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	d, _ := discovery.New(client, discovery.WithBasePath("/example-registry"))

	reg, err := d.Register(ctx, discovery.Instance{Name: "billing", ID: "billing-1", Address: "10.0.0.7", Port: new(9000)})
	if err != nil {
		fmt.Println(err)
		return
	}
	placed, _ := reg.Registered(ctx) // done, with a cause, when no longer registered
	found, _ := d.Instances(ctx, "billing")
	fmt.Println(reg.Path(), found[0].Type, *found[0].Port, placed.Generation())

	upd := reg.Instance()
	upd.Port = new(9001)
	_ = reg.Update(ctx, upd) // what is registered from now on, a new session included
	found, _ = d.Instances(ctx, "billing")
	fmt.Println(*found[0].Port)

	_ = reg.Unregister(ctx) // no reconnection brings it back
	fmt.Println(context.Cause(placed.Context()))
	found, _ = d.Instances(ctx, "billing")
	fmt.Println(len(found))
	// Output:
	// /example-registry/billing/billing-1 DYNAMIC 9000 1
	// 9001
	// nodes: closed
	// 0
}
