package clikit

import (
	"fmt"
	"strconv"

	"github.com/spf13/pflag"
)

// IntVar and Int64Var define integer flags that read decimal only.
// pflag's own read any base ("010" is 8, "0x10" 16), so a zero-padded
// --epoch 010 would fence the lease of epoch 8.
func IntVar(f *pflag.FlagSet, p *int, name string, value int, usage string) {
	*p = value
	f.Var(&decimal[int]{p}, name, usage)
}

// Int64Var is IntVar for an int64.
func Int64Var(f *pflag.FlagSet, p *int64, name string, value int64, usage string) {
	*p = value
	f.Var(&decimal[int64]{p}, name, usage)
}

type decimal[T int | int64] struct{ p *T }

func (d *decimal[T]) String() string { return strconv.FormatInt(int64(*d.p), 10) }

func (d *decimal[T]) Set(s string) error {
	var zero T
	bits := 64
	if _, isInt := any(zero).(int); isInt {
		bits = strconv.IntSize
	}
	n, err := strconv.ParseInt(s, 10, bits)
	if err != nil {
		return fmt.Errorf("%q is not a whole number in decimal", s)
	}
	*d.p = T(n)
	return nil
}

func (d *decimal[T]) Type() string {
	var zero T
	if _, isInt := any(zero).(int); isInt {
		return "int"
	}
	return "int64"
}
