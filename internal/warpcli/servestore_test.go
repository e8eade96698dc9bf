package warpcli_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gyrum-labs/warp/client"
	"github.com/gyrum-labs/warp/internal/sqlite"
	"github.com/gyrum-labs/warp/internal/warp"
	"github.com/gyrum-labs/warp/internal/warpcli"
)

// closeCounter is a store that counts its Close calls.
type closeCounter struct {
	warp.Store
	closes int
}

func (c *closeCounter) Close() error { c.closes++; return c.Store.Close() }

// A store handed to Main is the one served (DB is not opened), and Main
// closes it: after Close, and after a Run that fails.
func TestServeAnOpenStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	open := func(name string) *closeCounter {
		db, err := sqlite.Open(ctx, filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return &closeCounter{Store: db}
	}
	given := open("given.db")
	cfg := warpcli.DefaultServeConfig()
	cfg.Addr, cfg.DB, cfg.Store = "127.0.0.1:0", filepath.Join(dir, "never.db"), given
	m := warpcli.NewMain(cfg)
	if err := m.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Service.CreateTicket(ctx, warp.NewTicket{ID: "S-1"}); err != nil {
		t.Fatal(err)
	}
	if got, err := client.NewClient(m.URL(), "").Ticket(ctx, "S-1"); err != nil || got.ID != "S-1" {
		t.Errorf("the ticket made on the given store, over HTTP: %+v %v", got, err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if given.closes != 1 {
		t.Errorf("the given store was closed %d times by Close, want once", given.closes)
	}
	if _, err := os.Stat(cfg.DB); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("DB %s: %v, want it never made: a store was given", cfg.DB, err)
	}

	failing := open("failing.db")
	cfg.Store, cfg.SweepInterval = failing, 0
	err := warpcli.NewMain(cfg).Run(ctx)
	if !errors.Is(err, warp.ErrInvalid) || !strings.Contains(err.Error(), "sweep interval") {
		t.Fatalf("Run with a zero sweep interval: %v, want it refused", err)
	}
	if failing.closes != 1 {
		t.Errorf("a Run that failed closed the given store %d times, want once", failing.closes)
	}
}
