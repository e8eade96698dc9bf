package clikit_test

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/gyrum-labs/warp/internal/clikit"
)

// Integer flags read decimal only: pflag's own take "010" for 8 and
// "0x10" for 16, so a zero-padded --epoch 010 would fence epoch 8.
func TestIntegerFlagsAreDecimal(t *testing.T) {
	for _, c := range []struct {
		arg  string
		want int64
		ok   bool
	}{
		{"10", 10, true}, {"010", 10, true}, {"-3", -3, true}, {"0", 0, true},
		{"0x10", 0, false}, {"0b1", 0, false}, {"1e3", 0, false}, {"", 0, false}, {"9223372036854775808", 0, false},
	} {
		f := pflag.NewFlagSet("t", pflag.ContinueOnError)
		var epoch int64
		var n int
		clikit.Int64Var(f, &epoch, "epoch", 7, "")
		clikit.IntVar(f, &n, "n", 7, "")
		err := f.Parse([]string{"--epoch", c.arg, "--n", c.arg})
		if (err == nil) != c.ok {
			t.Errorf("%q: err %v, want ok %v", c.arg, err, c.ok)
			continue
		}
		if c.ok && (epoch != c.want || int64(n) != c.want) {
			t.Errorf("%q: %d and %d, want %d", c.arg, epoch, n, c.want)
		}
		if !c.ok && !strings.Contains(err.Error(), "decimal") {
			t.Errorf("%q: error %q does not say decimal", c.arg, err)
		}
	}
	f := pflag.NewFlagSet("t", pflag.ContinueOnError)
	var n int
	clikit.IntVar(f, &n, "n", 42, "how many")
	if fl := f.Lookup("n"); fl.DefValue != "42" || fl.Value.Type() != "int" || n != 42 {
		t.Errorf("default %q type %q value %d", fl.DefValue, fl.Value.Type(), n)
	}
}
