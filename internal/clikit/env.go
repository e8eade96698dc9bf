package clikit

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// EnvName returns the environment variable of a flag: prefix + the flag
// name in upper snake case (EnvName("WARP_", "lease-window") is
// "WARP_LEASE_WINDOW").
func EnvName(prefix, flag string) string {
	return prefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// BindEnv sets every flag of fs the command line did not set (except
// --help) from its variable EnvName(prefix, flag), read with lookup
// (os.LookupEnv when nil); an empty variable counts as unset, so a flag on
// the command line wins over the environment, which wins over the default.
// Values that do not parse make one UsageError naming every such variable:
// `invalid environment: WARP_X="v": reason; ...`.
func BindEnv(fs *pflag.FlagSet, prefix string, lookup func(key string) (string, bool)) error {
	var errs []string
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Changed || f.Name == "help" {
			return
		}
		key := EnvName(prefix, f.Name)
		v, ok := LookupEnv(lookup, key)
		if !ok || v == "" {
			return
		}
		if err := f.Value.Set(v); err != nil {
			errs = append(errs, fmt.Sprintf("%s=%q: %v", key, v, err))
		}
	})
	if len(errs) > 0 {
		return Usagef("invalid environment: %s", strings.Join(errs, "; "))
	}
	return nil
}

// The programs take their environment and clock as fields tests replace;
// nil means the process's own. These read a field, or the process's own
// when it is nil.

// LookupEnv returns lookup(key), or os.LookupEnv(key) when lookup is nil.
func LookupEnv(lookup func(key string) (string, bool), key string) (string, bool) {
	if lookup != nil {
		return lookup(key)
	}
	return os.LookupEnv(key)
}

// Getenv returns getenv(key), or os.Getenv(key) when getenv is nil.
func Getenv(getenv func(key string) string, key string) string {
	if getenv != nil {
		return getenv(key)
	}
	return os.Getenv(key)
}

// Now returns now(), or time.Now() when now is nil.
func Now(now func() time.Time) time.Time {
	if now != nil {
		return now()
	}
	return time.Now()
}
