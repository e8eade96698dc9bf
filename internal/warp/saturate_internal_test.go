package warp

import (
	"math"
	"testing"
)

func TestAddSaturating(t *testing.T) {
	for _, c := range []struct{ a, b, want int64 }{
		{0, 0, 0},
		{3, 4, 7},
		{math.MaxInt64 - 1, 1, math.MaxInt64},
		{math.MaxInt64, math.MaxInt64, math.MaxInt64},
		{math.MaxInt64 - 5, MaxHookEvents, math.MaxInt64},
	} {
		if got := addSaturating(c.a, c.b); got != c.want {
			t.Errorf("addSaturating(%d, %d) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
