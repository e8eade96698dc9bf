// Package client is warp's Go client: the Client for its HTTP API, the
// JSON types of that API (the server encodes and decodes these very
// types), its error codes, and the error value each code unwraps to. It
// needs only the standard library. gyrum and the warp CLI use it
// themselves. The API is described for other languages by the OpenAPI
// document the server serves at GET /v1/openapi.json, and the heartbeat
// body by /v1/heartbeat.schema.json.
//
//	c := client.NewClient("http://127.0.0.1:7077", os.Getenv("WARP_TOKEN"))
//	t, err := c.Claim(ctx, "T-1", client.ClaimRequest{Agent: "me", Host: "h1"})
//	if errors.Is(err, client.ErrConflict) { ... }
//	_, err = c.WithLeaseSecret(t.LeaseSecret).Heartbeat(ctx, client.NewHeartbeat("T-1", t.Epoch, age))
package client
