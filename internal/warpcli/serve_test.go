package warpcli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/warpcli"
)

func slogText(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

// TEST-NET-1 (RFC 5737): not loopback, and not an address of this host,
// so a configuration that passes the guard fails at listen instead of
// opening a port to the network.
const publicAddr = "192.0.2.1:0"

func TestServeRefusesNonLoopbackWithoutTokens(t *testing.T) {
	base := func() warpcli.ServeConfig {
		cfg := warpcli.DefaultServeConfig()
		cfg.DB = filepath.Join(t.TempDir(), "warp.db")
		return cfg
	}
	for _, addr := range []string{publicAddr, "0.0.0.0:0", ":0", "example.com:7077"} {
		cfg := base()
		cfg.Addr = addr
		err := warpcli.NewMain(cfg).Run(context.Background())
		if err == nil || !strings.Contains(err.Error(), "refusing to listen on "+addr+" without tokens") ||
			!strings.Contains(err.Error(), "--token-file") || !strings.Contains(err.Error(), "--insecure") {
			t.Errorf("addr %s: got %v, want the refusal naming --token-file and --insecure", addr, err)
		}
		if _, statErr := os.Stat(cfg.DB); statErr == nil {
			t.Errorf("addr %s: the refusal created the database", addr)
		}
	}
	// --insecure, or a token, passes the guard (and the test address then
	// fails to bind, which proves the guard let it through).
	cfg := base()
	cfg.Addr, cfg.Insecure = publicAddr, true
	if err := warpcli.NewMain(cfg).Run(context.Background()); err == nil || !strings.Contains(err.Error(), "listen on "+publicAddr) {
		t.Errorf("--insecure: got %v, want a listen error", err)
	}
	cfg = base()
	cfg.Addr, cfg.AdminToken = publicAddr, "s3cret"
	if err := warpcli.NewMain(cfg).Run(context.Background()); err == nil || !strings.Contains(err.Error(), "listen on "+publicAddr) {
		t.Errorf("with a token: got %v, want a listen error", err)
	}
	// Loopback needs nothing.
	for _, addr := range []string{"127.0.0.1:0", "localhost:0"} {
		cfg := base()
		cfg.Addr = addr
		m := warpcli.NewMain(cfg)
		if err := m.Run(context.Background()); err != nil {
			t.Errorf("addr %s: %v", addr, err)
			continue
		}
		m.Close()
	}
}

var listening = regexp.MustCompile(`warp listening on (http://127\.0\.0\.1:\d+)`)

// serveInProcess runs `warp serve args...` through the command tree until
// the returned stop is called; it returns the server URL from the log line.
func serveInProcess(t *testing.T, env map[string]string, args ...string) (url string, logs *syncBuffer, stop func() result) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs = &syncBuffer{}
	var out syncBuffer
	done := make(chan int, 1)
	c := &warpcli.CLI{Stdout: &out, Stderr: logs, LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}
	go func() { done <- c.Run(ctx, append([]string{"serve"}, args...)) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if m := listening.FindStringSubmatch(logs.String()); m != nil {
			url = m[1]
			break
		}
		select {
		case code := <-done:
			cancel()
			t.Fatalf("serve exited %d before listening: %s", code, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("serve not listening within 10s: %s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	stopped := false
	stop = func() result {
		if !stopped {
			stopped = true
			cancel()
		}
		select {
		case code := <-done:
			return result{code: code, stdout: out.String(), stderr: logs.String()}
		case <-time.After(10 * time.Second):
			t.Fatal("serve did not stop within 10s of cancellation")
		}
		return result{}
	}
	t.Cleanup(func() {
		if !stopped {
			stop()
		}
	})
	return url, logs, stop
}

func TestServeCommandFlagsBeatEnvironment(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{
		"WARP_DB":               filepath.Join(dir, "from-env.db"),
		"WARP_MODE":             "activity",
		"WARP_LEASE_WINDOW":     "45m",
		"WARP_SWEEP_INTERVAL":   "250ms",
		"WARP_STARTUP_GRACE":    "3m",
		"WARP_ADDR":             "127.0.0.1:1", // the flag below wins
		"WARP_HOOK_ALARM_RATIO": "0.5",
		"WARP_HOOK_ALARM_MIN":   "9", // the flag below wins
	}
	url, _, stop := serveInProcess(t, env, "--addr", "127.0.0.1:0", "--lease-window", "20m", "--hook-alarm-min", "4")
	cl := client.NewClient(url, "")
	mode, err := cl.Mode(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if mode != "activity" {
		t.Errorf("mode %q, want activity from WARP_MODE", mode)
	}
	if _, err := os.Stat(filepath.Join(dir, "from-env.db")); err != nil {
		t.Errorf("WARP_DB not used: %v", err)
	}
	r := stop()
	if r.code != 0 {
		t.Fatalf("serve exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"lease_window=20m0s", "sweep_interval=250ms", "startup_grace=3m0s", "mode=activity",
		"hook_alarm_ratio=0.5", "hook_alarm_min=4", "warp shutting down", "warp stopped"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("log does not contain %q:\n%s", want, r.stderr)
		}
	}
}

func TestServeReadsAdminTokenFromEnvironment(t *testing.T) {
	url, _, _ := serveInProcess(t, map[string]string{"WARP_TOKEN": "env-admin"},
		"--addr", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "w.db"))
	if _, err := client.NewClient(url, "").Mode(context.Background()); err == nil {
		t.Fatal("no token accepted although WARP_TOKEN configured one")
	}
	if _, err := client.NewClient(url, "env-admin").Mode(context.Background()); err != nil {
		t.Fatalf("WARP_TOKEN as admin: %v", err)
	}
}

// JSON logs write durations as the flags take them, not in nanoseconds.
func TestServeJSONLogWritesDurationsAsText(t *testing.T) {
	_, _, stop := serveInProcess(t, nil, "--addr", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "w.db"),
		"--log-format", "json", "--lease-window", "30m", "--sweep-interval", "250ms")
	r := stop()
	var start map[string]any
	for _, line := range strings.Split(r.stderr, "\n") {
		if strings.Contains(line, "warp listening on") {
			if err := json.Unmarshal([]byte(line), &start); err != nil {
				t.Fatalf("the start line is not JSON: %v: %s", err, line)
			}
		}
	}
	if start == nil {
		t.Fatalf("no start line in the log:\n%s", r.stderr)
	}
	for k, want := range map[string]string{"lease_window": "30m0s", "sweep_interval": "250ms", "startup_grace": "10m0s"} {
		if got, ok := start[k].(string); !ok || got != want {
			t.Errorf("%s = %#v, want %q", k, start[k], want)
		}
	}
}

// The container image names a token file that may not be there: with
// --token-file-optional, WARP_TOKEN alone starts it.
func TestServeWithOptionalTokenFileAndWarpToken(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "tokens")
	url, _, _ := serveInProcess(t, map[string]string{"WARP_TOKEN": "env-admin", "WARP_TOKEN_FILE_OPTIONAL": "true"},
		"--addr", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "w.db"), "--token-file", missing)
	if _, err := client.NewClient(url, "").Mode(context.Background()); err == nil {
		t.Fatal("no token accepted although WARP_TOKEN configured one")
	}
	if _, err := client.NewClient(url, "env-admin").Mode(context.Background()); err != nil {
		t.Fatalf("WARP_TOKEN as admin: %v", err)
	}
}

// WARP_TOKEN that the token file also lists as admin is the same token
// twice: served.
func TestServeAdminTokenAlsoInTheFile(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("admin:root\nagent:a1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	url, _, _ := serveInProcess(t, map[string]string{"WARP_TOKEN": "root"},
		"--addr", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "w.db"), "--token-file", tokens)
	if _, err := client.NewClient(url, "root").Mode(context.Background()); err != nil {
		t.Fatalf("the admin token: %v", err)
	}
	if _, err := client.NewClient(url, "a1").Mode(context.Background()); err == nil {
		t.Fatal("the agent token read the mode, an admin route")
	}
}

func TestServeConfigurationErrors(t *testing.T) {
	dir := t.TempDir()
	badTokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(badTokens, []byte("admin:ok\n\nsuperuser:x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	agentTokens := filepath.Join(dir, "agent-tokens")
	if err := os.WriteFile(agentTokens, []byte("admin:root\nagent:shared\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "w.db")
	cases := []struct {
		name string
		env  map[string]string
		args []string
		code int
		want []string
	}{
		{"env not a duration", map[string]string{"WARP_LEASE_WINDOW": "soon"}, nil, warpcli.ExitUsage, []string{`WARP_LEASE_WINDOW="soon"`}},
		{"env bool", map[string]string{"WARP_INSECURE": "maybe"}, nil, warpcli.ExitUsage, []string{"WARP_INSECURE"}},
		{"unknown mode", nil, []string{"--mode", "yolo"}, warpcli.ExitUsage, []string{"--mode", "yolo"}},
		{"zero lease window", nil, []string{"--lease-window", "0s"}, warpcli.ExitUsage, []string{"lease window must be positive"}},
		{"zero sweep interval", nil, []string{"--sweep-interval", "0s"}, warpcli.ExitUsage, []string{"--sweep-interval"}},
		{"bad flag value", nil, []string{"--stall-after", "x"}, warpcli.ExitUsage, []string{"stall-after"}},
		{"stray argument", nil, []string{"now"}, warpcli.ExitUsage, []string{"unknown command"}},
		{"hook alarm ratio 0", nil, []string{"--hook-alarm-ratio", "0"}, warpcli.ExitUsage, []string{"--hook-alarm-ratio", "(0, 1]"}},
		{"hook alarm ratio above 1", nil, []string{"--hook-alarm-ratio", "1.5"}, warpcli.ExitUsage, []string{"(0, 1]", "1.5"}},
		{"hook alarm ratio not a number", nil, []string{"--hook-alarm-ratio", "most"}, warpcli.ExitUsage, []string{"hook-alarm-ratio"}},
		{"hook alarm min 0 from env", map[string]string{"WARP_HOOK_ALARM_MIN": "0"}, nil, warpcli.ExitUsage, []string{"at least 1 lease"}},
		{"hook alarm min not a number from env", map[string]string{"WARP_HOOK_ALARM_MIN": "three"}, nil, warpcli.ExitUsage, []string{`WARP_HOOK_ALARM_MIN="three"`}},
		{"bad token file", nil, []string{"--token-file", badTokens}, warpcli.ExitError, []string{badTokens + " line 3", "superuser"}},
		// gyrum reads WARP_TOKEN as its agent token: exported where warp
		// serve starts, it must not make that agent an admin.
		{"WARP_TOKEN is an agent token of the file", map[string]string{"WARP_TOKEN": "shared"}, []string{"--token-file", agentTokens},
			warpcli.ExitError, []string{"WARP_TOKEN", "agent token in " + agentTokens, "secret of its own"}},
		{"max conns in hex from env", map[string]string{"WARP_MAX_CONNS": "0x100"}, nil, warpcli.ExitUsage, []string{`WARP_MAX_CONNS="0x100"`, "decimal"}},
		{"missing token file", nil, []string{"--token-file", filepath.Join(dir, "none")}, warpcli.ExitError, []string{"token file"}},
		{"postgres unreachable", nil, []string{"--db", "postgres://warp:pw@127.0.0.1:1/warp"}, warpcli.ExitError, []string{"PostgreSQL"}},
		{"non-loopback", nil, []string{"--addr", "0.0.0.0:7077"}, warpcli.ExitError, []string{"refusing to listen", "--insecure"}},
		// The image's start without its token file and without WARP_TOKEN.
		{"optional token file missing, no WARP_TOKEN", nil, []string{"--addr", "0.0.0.0:7077", "--token-file", filepath.Join(dir, "none"), "--token-file-optional"},
			warpcli.ExitError, []string{"refusing to listen"}},
		{"optional token file that is bad", nil, []string{"--token-file", badTokens, "--token-file-optional"}, warpcli.ExitError, []string{"superuser"}},
		{"db is a directory", nil, []string{"--db", dir}, warpcli.ExitError, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"serve", "--addr", "127.0.0.1:0", "--db", db}, c.args...)
			r := runCLI(t, c.env, time.Now, args...)
			r.mustFail(t, c.code, c.want...)
		})
	}
}

// A start that cannot bind (a crash-looping replica, a second warp on the
// same port) leaves the database byte for byte as it was — it used to
// rewrite the startup grace of the whole fleet first — and its error names
// the cause instead of asking whether warp runs.
func TestServeThatCannotBindChangesNothing(t *testing.T) {
	db := filepath.Join(t.TempDir(), "warp.db")
	cfg := warpcli.DefaultServeConfig()
	cfg.DB, cfg.Addr = db, "127.0.0.1:0"
	m := warpcli.NewMain(cfg)
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	m.Close()
	before, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	walBefore, walErr := os.ReadFile(db + "-wal")
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	r := runCLI(t, map[string]string{}, time.Now, "serve", "--db", db, "--addr", taken.Addr().String())
	r.mustFail(t, warpcli.ExitError, "listen on "+taken.Addr().String(), "address already in use", "another process already listens there")
	if strings.Contains(r.stderr, "is warp running") {
		t.Errorf("stderr %q asks whether warp runs", r.stderr)
	}
	after, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Error("the failed start changed the database")
	}
	walAfter, walErr2 := os.ReadFile(db + "-wal")
	if (walErr == nil) != (walErr2 == nil) || !bytes.Equal(walBefore, walAfter) {
		t.Error("the failed start changed the database's write-ahead log")
	}
}
