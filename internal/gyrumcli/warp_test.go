package gyrumcli_test

import (
	"testing"

	"github.com/gyrum-labs/warp/internal/testsupport/warptest"
)

// warpServer is the real warp of these tests (internal/testsupport/warptest).
type warpServer = warptest.Server

func newWarp(t testing.TB) *warpServer { return warptest.Start(t) }
