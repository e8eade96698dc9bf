package heartbeat

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Defaults of the agent side (docs/DESIGN.md section 2).
const (
	DefaultInterval    = 240 * time.Second
	DefaultStaleness   = 900 * time.Second
	DefaultInFlightMax = 7200 * time.Second
	DefaultJitter      = 0.10
	// DefaultHungAfter is how long an unfinished shell call may go
	// without a process backing it before it counts only its start
	// (issue 44).
	DefaultHungAfter = 120 * time.Second
)

// Environment variables of the loop's durations. They take seconds, with
// decimals ("0.25"), so tests and the simulator scale time down.
const (
	EnvInterval    = "HEARTBEAT_INTERVAL_SECS"
	EnvStaleness   = "HEARTBEAT_ACTIVITY_STALENESS_SECS"
	EnvInFlightMax = "HEARTBEAT_INFLIGHT_MAX_SECS"
	EnvHungAfter   = "HEARTBEAT_HUNG_CALL_SECS"
)

// Durations are the loop's timing settings.
type Durations struct {
	Interval    time.Duration
	Staleness   time.Duration
	InFlightMax time.Duration
	// HungAfter: an unfinished shell call no process has backed for this
	// long counts only its start; 0 means DefaultHungAfter.
	HungAfter time.Duration
}

// DurationsFromEnv reads the three *_SECS variables with getenv, using the
// defaults for unset ones. A value that is not a positive finite number of
// seconds is an error naming the variable.
func DurationsFromEnv(getenv func(string) string) (Durations, error) {
	var d Durations
	var err error
	if d.Interval, err = Seconds(EnvInterval, getenv(EnvInterval), DefaultInterval); err != nil {
		return d, err
	}
	if d.Staleness, err = Seconds(EnvStaleness, getenv(EnvStaleness), DefaultStaleness); err != nil {
		return d, err
	}
	if d.InFlightMax, err = Seconds(EnvInFlightMax, getenv(EnvInFlightMax), DefaultInFlightMax); err != nil {
		return d, err
	}
	if d.HungAfter, err = Seconds(EnvHungAfter, getenv(EnvHungAfter), DefaultHungAfter); err != nil {
		return d, err
	}
	return d, nil
}

// Seconds parses value as seconds (decimals allowed); def when value is empty.
func Seconds(name, value string, def time.Duration) (time.Duration, error) {
	value = strings.TrimSpace(value)
	if value == "" {
		return def, nil
	}
	f, err := strconv.ParseFloat(value, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f <= 0 {
		return 0, fmt.Errorf("%s=%q: want a positive number of seconds, such as 240 or 0.25", name, value)
	}
	if f > 366*24*3600 {
		return 0, fmt.Errorf("%s=%q: more than a year", name, value)
	}
	d := time.Duration(f * float64(time.Second))
	if d < time.Millisecond {
		return 0, fmt.Errorf("%s=%q: less than a millisecond", name, value)
	}
	return d, nil
}
