package opencode_test

import (
	"os"
	"testing"

	"github.com/gyrum-labs/warp/internal/e2e/e2etest"
)

func TestMain(m *testing.M) {
	os.Exit(e2etest.Main(m, opencode.Find, nil))
}
