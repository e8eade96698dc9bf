package httpapi

import (
	_ "embed"
	"net/http"
)

// openAPIDoc is the OpenAPI 3.1 document of the HTTP API, served as is at
// GET /v1/openapi.json. openapi_test.go checks it against the server: every
// route, operation, status, error code and wire type.
//
//go:embed openapi.json
var openAPIDoc []byte

// heartbeatSchema is the JSON Schema (draft 2020-12) of heartbeat bodies v1
// and v2 that the OpenAPI document refers to as "heartbeat.schema.json",
// served beside it at GET /v1/heartbeat.schema.json.
//
//go:embed heartbeat.schema.json
var heartbeatSchema []byte

// OpenAPI returns a copy of the embedded OpenAPI document.
func OpenAPI() []byte { return append([]byte(nil), openAPIDoc...) }

// HeartbeatSchema returns a copy of the embedded heartbeat JSON Schema.
func HeartbeatSchema() []byte { return append([]byte(nil), heartbeatSchema...) }

// docRoutes registers the two documents. They are the public contract, so
// they need no token.
func (s *Server) docRoutes() {
	s.handle("GET /v1/openapi.json", serveDoc(openAPIDoc, "application/json"), RoleOpen)
	s.handle("GET /v1/heartbeat.schema.json", serveDoc(heartbeatSchema, "application/schema+json"), RoleOpen)
}

func serveDoc(doc []byte, contentType string) apiHandler {
	return func(w http.ResponseWriter, r *http.Request) error {
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			_, _ = w.Write(doc)
		}
		return nil
	}
}
