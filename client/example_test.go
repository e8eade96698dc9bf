package client_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/gyrum-labs/warp/client"
)

// A heartbeat loop's one step, as a non-gyrum client writes it.
func Example() {
	ctx := context.Background()
	c := client.NewClient("http://127.0.0.1:7077", "AGENT-TOKEN").WithLeaseSecret("SECRET-FROM-THE-CLAIM")
	v2, age := 2, 12.5
	_, err := c.Heartbeat(ctx, client.HeartbeatRequest{SchemaVersion: &v2, Ticket: "T-1", Epoch: 3, ActivityAgeS: &age})
	switch {
	case errors.Is(err, client.ErrLeaseEnded), errors.Is(err, client.ErrStaleEpoch), errors.Is(err, client.ErrNotHolder):
		fmt.Println("the lease is over: stop and tell the agent")
	case err != nil:
		fmt.Println("retry within max_retry_gap_s")
	}
}
