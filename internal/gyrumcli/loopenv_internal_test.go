package gyrumcli

import (
	"slices"
	"testing"
)

func TestLoopEnvOneProcUnlessSet(t *testing.T) {
	if got := loopEnv([]string{"A=1"}); !slices.Equal(got, []string{"A=1", "GOMAXPROCS=1"}) {
		t.Errorf("got %q, want GOMAXPROCS=1 added", got)
	}
	if got := loopEnv([]string{"GOMAXPROCS=4", "A=1"}); !slices.Equal(got, []string{"GOMAXPROCS=4", "A=1"}) {
		t.Errorf("got %q, want the user's GOMAXPROCS kept", got)
	}
}
