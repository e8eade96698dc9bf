package clikit_test

import (
	"errors"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/gyrum-labs/warp/internal/clikit"
)

func TestEnvName(t *testing.T) {
	for _, c := range []struct{ prefix, flag, want string }{
		{"WARP_", "lease-window", "WARP_LEASE_WINDOW"},
		{"WARP_", "db", "WARP_DB"},
		{"GYRUM_", "max-conns-per-client", "GYRUM_MAX_CONNS_PER_CLIENT"},
		{"", "x", "X"},
	} {
		if got := clikit.EnvName(c.prefix, c.flag); got != c.want {
			t.Errorf("EnvName(%q, %q) = %q, want %q", c.prefix, c.flag, got, c.want)
		}
	}
}

// flags returns a flag set like warp serve's, after parsing args.
func flags(t *testing.T, args ...string) (*pflag.FlagSet, *string, *time.Duration, *bool, *int) {
	t.Helper()
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:7077", "")
	window := fs.Duration("lease-window", 30*time.Minute, "")
	insecure := fs.Bool("insecure", false, "")
	n := fs.Int("max-conns", 100, "")
	fs.BoolP("help", "h", false, "")
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return fs, addr, window, insecure, n
}

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

func TestBindEnv(t *testing.T) {
	fs, addr, window, insecure, n := flags(t, "--addr", "0.0.0.0:1")
	err := clikit.BindEnv(fs, "WARP_", env(map[string]string{
		"WARP_ADDR":         "10.0.0.1:2", // the command line wins
		"WARP_LEASE_WINDOW": "45m",
		"WARP_INSECURE":     "true",
		"WARP_MAX_CONNS":    "", // empty: unset
		"WARP_HELP":         "true",
		"GYRUM_MAX_CONNS":   "7", // another prefix
	}))
	if err != nil {
		t.Fatal(err)
	}
	if *addr != "0.0.0.0:1" || *window != 45*time.Minute || !*insecure || *n != 100 {
		t.Errorf("addr %s, lease-window %s, insecure %v, max-conns %d", *addr, *window, *insecure, *n)
	}
	if h, _ := fs.GetBool("help"); h {
		t.Error("WARP_HELP set --help")
	}

	fs, _, _, _, n = flags(t)
	if err := clikit.BindEnv(fs, "GYRUM_", env(map[string]string{"GYRUM_MAX_CONNS": "7"})); err != nil || *n != 7 {
		t.Errorf("GYRUM_MAX_CONNS=7: max-conns %d, %v", *n, err)
	}
}

// Every value that does not parse is named, in one usage error.
func TestBindEnvErrors(t *testing.T) {
	fs, _, _, _, _ := flags(t)
	err := clikit.BindEnv(fs, "WARP_", env(map[string]string{
		"WARP_LEASE_WINDOW": "soon",
		"WARP_INSECURE":     "maybe",
		"WARP_ADDR":         "10.0.0.1:2",
	}))
	var ue *clikit.UsageError
	if !errors.As(err, &ue) {
		t.Fatalf("BindEnv = %v, want a usage error", err)
	}
	want := `invalid environment: WARP_INSECURE="maybe": strconv.ParseBool: parsing "maybe": invalid syntax; ` +
		`WARP_LEASE_WINDOW="soon": time: invalid duration "soon"`
	if err.Error() != want {
		t.Errorf("BindEnv = %q\nwant %q", err, want)
	}
}

// A nil lookup reads the process's environment.
func TestBindEnvProcess(t *testing.T) {
	t.Setenv("CLIKITTEST_MAX_CONNS", "9")
	fs, _, _, _, n := flags(t)
	if err := clikit.BindEnv(fs, "CLIKITTEST_", nil); err != nil || *n != 9 {
		t.Errorf("max-conns %d, %v", *n, err)
	}
}

func TestInjected(t *testing.T) {
	t.Setenv("CLIKITTEST_VAR", "process")
	if v, ok := clikit.LookupEnv(nil, "CLIKITTEST_VAR"); v != "process" || !ok {
		t.Errorf("LookupEnv(nil) = %q, %v", v, ok)
	}
	if v, ok := clikit.LookupEnv(env(map[string]string{}), "CLIKITTEST_VAR"); v != "" || ok {
		t.Errorf("LookupEnv(empty) = %q, %v", v, ok)
	}
	if v := clikit.Getenv(nil, "CLIKITTEST_VAR"); v != "process" {
		t.Errorf("Getenv(nil) = %q", v)
	}
	if v := clikit.Getenv(func(string) string { return "test" }, "CLIKITTEST_VAR"); v != "test" {
		t.Errorf("Getenv(f) = %q", v)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if got := clikit.Now(func() time.Time { return at }); !got.Equal(at) {
		t.Errorf("Now(f) = %v", got)
	}
	if got := clikit.Now(nil); time.Since(got) > time.Minute || time.Since(got) < 0 {
		t.Errorf("Now(nil) = %v", got)
	}
}
