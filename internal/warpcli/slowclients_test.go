package warpcli_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
	"github.com/gyrum-labs/warp/internal/warpcli"
	"github.com/gyrum-labs/warp/internal/warpcli/warpclitest"
)

// slowConn opens a connection from local IP ip that sends a heartbeat's
// headers and one byte of its body, then nothing: what took warp down
// (10,500 of them exhausted its descriptors in 6 s).
func slowConn(t *testing.T, ip, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial from %s: %v", ip, err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST /v1/heartbeat HTTP/1.1\r\nHost: warp\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{")
	return c
}

// readStatus reads the status line the server sent on c, "" when none
// came within wait.
func readStatus(c net.Conn, wait time.Duration) string {
	_ = c.SetReadDeadline(time.Now().Add(wait))
	line, _ := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line)
}

// A thousand slow clients hold connections; agents on another address
// still get their heartbeats and /healthz answered at once, a slow
// client's extra connection is refused with 429, and past the total the
// server answers 503 instead of running out of descriptors.
func TestSlowClientsDoNotStarveHeartbeats(t *testing.T) {
	const perClient, total = 50, 1010
	m := warpclitest.Start(t, func(c *warpcli.ServeConfig) {
		c.MaxConnsPerClient, c.MaxConns = perClient, total
		c.Now = nil // the machine's clock
	})
	addr := strings.TrimPrefix(m.URL(), "http://")
	ctx := context.Background()
	if _, err := m.Service.CreateTicket(ctx, warp.NewTicket{ID: "T-1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Service.Claim(ctx, "T-1", warp.ClaimRequest{Agent: "A", Host: "h"}); err != nil {
		t.Fatal(err)
	}

	const slow = 1000
	for i := range slow {
		slowConn(t, fmt.Sprintf("127.0.0.%d", 2+i/perClient), addr)
	}
	// Answered at all while the slow clients hold their connections: the
	// bound is a hang guard, not a speed claim (BENCHMARKS measures speed).
	agent := &http.Client{Timeout: 10 * time.Second}
	for range 3 {
		resp, err := agent.Post(m.URL()+"/v1/heartbeat", "application/json",
			strings.NewReader(`{"schema_version":2,"ticket":"T-1","epoch":1,"activity_age_s":1}`))
		if err != nil {
			t.Fatalf("heartbeat with %d slow clients connected: %v", slow, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("heartbeat: %d", resp.StatusCode)
		}
		resp, err = agent.Get(m.URL() + "/healthz")
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("/healthz with %d slow clients connected: %v %v", slow, err, resp)
		}
		resp.Body.Close()
	}
	// One more from a slow client's address: 429 (the bound only guards
	// against a hang).
	if got := readStatus(slowConn(t, "127.0.0.2", addr), 10*time.Second); !strings.HasPrefix(got, "HTTP/1.1 429") {
		t.Errorf("51st connection from one client: status line %q, want 429", got)
	}
	// Fill the total from fresh addresses: past it, 503.
	refused := ""
	for i := 0; i < 20 && refused == ""; i++ {
		c := slowConn(t, fmt.Sprintf("127.0.1.%d", i+1), addr)
		if got := readStatus(c, 200*time.Millisecond); got != "" {
			refused = got
		}
	}
	if !strings.HasPrefix(refused, "HTTP/1.1 503") {
		t.Errorf("past %d connections: status line %q, want 503", total, refused)
	}
}
