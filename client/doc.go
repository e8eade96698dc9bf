// Package client is warp's public Go client: the Client for its HTTP API,
// the wire types the server encodes and decodes (the same types: the
// server imports them), and the error values answers unwrap to. gyrum and
// the warp CLI use it themselves. The API is described for other
// languages by the OpenAPI document the server serves at
// GET /v1/openapi.json, and the heartbeat body by /v1/heartbeat.schema.json.
//
//	c := client.NewClient("http://127.0.0.1:7077", os.Getenv("WARP_TOKEN"))
//	t, err := c.Claim(ctx, "T-1", client.ClaimRequest{Agent: "me", Host: "h1"})
//	if errors.Is(err, client.ErrConflict) { ... }
package client
