package postgres_test

import (
	"testing"

	"github.com/gyrum-labs/warp/internal/postgres"
	"github.com/gyrum-labs/warp/internal/testsupport/storetest"
	"github.com/gyrum-labs/warp/internal/warp"
)

// TestConformance runs the store conformance suite, each subtest on a fresh
// schema of its own.
func TestConformance(t *testing.T) {
	adminURL(t)
	storetest.Run(t, func(t *testing.T) warp.Store { return openDB(t, postgres.Options{MaxConns: 8}) })
}
