package gyrumcli_test

import (
	"testing"

	"github.com/gyrum-labs/warp/internal/warptest"
)

// warpServer is the real warp of these tests (internal/warptest).
type warpServer = warptest.Server

func newWarp(t testing.TB) *warpServer { return warptest.Start(t) }
