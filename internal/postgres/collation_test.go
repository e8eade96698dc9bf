package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/gyrum-labs/warp/internal/postgres"
	"github.com/gyrum-labs/warp/internal/warp"
)

// icuDatabase creates a database whose default collation is ICU's en-US
// (what the official postgres image and most hosted servers give: not
// byte order) and drops it when the test ends; it returns its URL.
func icuDatabase(t *testing.T) string {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "warp_test_icu_" + hex.EncodeToString(b)
	ctx := context.Background()
	if _, err := adminPool(t).Exec(ctx, "CREATE DATABASE "+name+" LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8' TEMPLATE template0"); err != nil {
		t.Skipf("this server cannot create an ICU-collated database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := adminPool(t).Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(adminURL(t))
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// Every transaction that locks several held leases must lock them in one
// order, or two of them deadlock: heartbeat batches lock in byte order,
// and so must the walk over every held lease (a mode change's recompute),
// whatever the database's collation. en-US orders these ids otherwise.
func TestHeldLeasesWalkInByteOrderOnAnICUDatabase(t *testing.T) {
	ctx := context.Background()
	db, err := postgres.Open(ctx, icuDatabase(t), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var en []string
	if err := db.Pool().QueryRow(ctx, `SELECT array_agg(x ORDER BY x) FROM unnest(ARRAY['t-1','T-2','a1','a-1','B','a_b','a-c']) x`).Scan(&en); err != nil {
		t.Fatal(err)
	}
	ids := []string{"t-1", "T-2", "a1", "a-1", "B", "a_b", "a-c"}
	bytes := slices.Sorted(slices.Values(ids))
	if slices.Equal(en, bytes) {
		t.Fatalf("the database's collation orders %v as bytes do: the test shows nothing here", en)
	}
	svc, err := warp.NewService(db, warp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	if err := svc.Init(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if _, err := svc.CreateTicket(ctx, warp.NewTicket{ID: id}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Claim(ctx, id, warp.ClaimRequest{Agent: "a", Host: "h"}); err != nil {
			t.Fatal(err)
		}
	}
	var walked []string
	err = db.Update(ctx, func(tx warp.Tx) error {
		walked = walked[:0]
		after := ""
		for {
			ls, err := tx.HeldLeases(ctx, "", after, 2)
			if err != nil {
				return err
			}
			for _, l := range ls {
				walked = append(walked, l.Ticket)
				after = l.Ticket
			}
			if len(ls) < 2 {
				return nil
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(walked, bytes) {
		t.Fatalf("walked %v, want byte order %v (the database's own: %v)", walked, bytes, en)
	}
	// A mode change (which walks them so) still works on such a database.
	if _, err := svc.SetMode(ctx, warp.ModeLegacy, true); err != nil {
		t.Fatal(err)
	}
}
