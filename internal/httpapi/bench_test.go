package httpapi_test

import (
	"bytes"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
)

// BenchmarkHeartbeatV2HTTP measures heartbeat ingest end to end: JSON over
// a real loopback connection, decoding, the fenced update in one SQLite
// write transaction, the answer. 64 leases share the load.
func BenchmarkHeartbeatV2HTTP(b *testing.B) {
	e := newEnv(b, envOptions{})
	const leases = 64
	bodies := make([][]byte, leases)
	for i := range leases {
		id := fmt.Sprintf("B-%02d", i)
		e.create(id)
		e.claim(id, "bench")
		bodies[i] = []byte(fmt.Sprintf(`{"schema_version":2,"ticket":%q,"epoch":1,"host":"bench","activity_age_s":1.5}`, id))
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var n atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1) % leases
			resp, err := client.Post(e.srv.URL+"/v1/heartbeat", "application/json", bytes.NewReader(bodies[i]))
			if err != nil {
				b.Error(err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
}
