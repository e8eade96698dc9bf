package heartbeat_test

import (
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/heartbeat"
)

func TestSeconds(t *testing.T) {
	good := map[string]time.Duration{"": 7 * time.Second, "240": 240 * time.Second, "0.25": 250 * time.Millisecond,
		" 1.5 ": 1500 * time.Millisecond, "1e2": 100 * time.Second}
	for in, want := range good {
		got, err := heartbeat.Seconds("X", in, 7*time.Second)
		if err != nil || got != want {
			t.Errorf("Seconds(%q): got %v, %v, want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"0", "-1", "abc", "NaN", "Inf", "1s", "0.0000001", "99999999999"} {
		if _, err := heartbeat.Seconds("HEARTBEAT_INTERVAL_SECS", in, time.Second); err == nil {
			t.Errorf("Seconds(%q) accepted", in)
		}
	}
}

func TestDurationsFromEnv(t *testing.T) {
	env := map[string]string{heartbeat.EnvInterval: "0.2", heartbeat.EnvInFlightMax: "3"}
	d, err := heartbeat.DurationsFromEnv(func(k string) string { return env[k] })
	want := heartbeat.Durations{Interval: 200 * time.Millisecond, Staleness: heartbeat.DefaultStaleness, InFlightMax: 3 * time.Second,
		HungAfter: heartbeat.DefaultHungAfter}
	if err != nil || d != want {
		t.Fatalf("got %+v, %v, want %+v", d, err, want)
	}
	env[heartbeat.EnvHungAfter] = "0.5"
	if d, err := heartbeat.DurationsFromEnv(func(k string) string { return env[k] }); err != nil || d.HungAfter != 500*time.Millisecond {
		t.Fatalf("HEARTBEAT_HUNG_CALL_SECS=0.5: got %+v, %v", d, err)
	}
	env[heartbeat.EnvHungAfter] = "-1"
	if _, err := heartbeat.DurationsFromEnv(func(k string) string { return env[k] }); err == nil {
		t.Fatal("a negative hung-call limit accepted")
	}
	delete(env, heartbeat.EnvHungAfter)
	env[heartbeat.EnvStaleness] = "soon"
	if _, err := heartbeat.DurationsFromEnv(func(k string) string { return env[k] }); err == nil {
		t.Fatal("bad staleness accepted")
	}
}
