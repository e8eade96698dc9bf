package sqlite

import (
	"context"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// leaseCache holds the current lease (and its ticket, without labels) of
// recently heartbeating tickets, as the writer connection last read or
// wrote them, so a heartbeat's transaction skips the read of its lease:
// the read was ~40 % of the group-commit transaction's time (a joined row
// of 33 columns through database/sql).
//
// It is only touched inside write transactions, which run one at a time
// on the single writer connection. It stays exact because
//   - every write of a ticket or lease through this store updates or
//     drops its entry, and a transaction that does not commit drops every
//     entry it touched;
//   - a commit by any other connection — another process on the same
//     file (a second warp, the sqlite3 shell) — changes the writer's
//     PRAGMA data_version, which each write transaction reads first: the
//     whole cache is dropped then.
//
// It holds at most max entries; when full, an arbitrary entry makes room
// (a fleet larger than the cache reads the leases it misses, as before).
type leaseCache struct {
	version int64 // data_version at the last check; -1 before any
	m       map[string]cachedLease
	max     int
	// hosts holds hosts whose row in hosts exists, so recording a
	// heartbeat's host skips the insert that would find it there. Same
	// rules; a prune of hosts empties it.
	hosts map[string]bool
	// meta holds meta values (the mode, read by every heartbeat batch) as
	// the writer last read or wrote them. Same rules.
	meta map[string]string
}

type cachedLease struct {
	t warp.Ticket
	l warp.Lease
}

// DefaultLeaseCache bounds the cache: ~100k leases of a few hundred bytes.
const DefaultLeaseCache = 100_000

func newLeaseCache(max int) *leaseCache {
	return &leaseCache{version: -1, m: map[string]cachedLease{}, max: max, hosts: map[string]bool{}, meta: map[string]string{}}
}

// check drops everything when another connection has committed since the
// last check.
func (c *leaseCache) check(ctx context.Context, t *tx) error {
	var v int64
	if err := t.queryRow(ctx, qDataVersion).Scan(&v); err != nil {
		return translate("read data_version", err)
	}
	if v != c.version {
		c.drop()
		c.version = v
	}
	return nil
}

func (c *leaseCache) put(id string, e cachedLease) {
	if _, ok := c.m[id]; !ok && len(c.m) >= c.max {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[id] = e
}

// touched records, in the transaction, an entry it set or dropped: a
// rollback drops them all.
func (t *tx) touched(id string) {
	t.keys = append(t.keys, id)
}

// rollback forgets every entry the transaction touched.
func (c *leaseCache) rollback(t *tx) {
	for _, k := range t.keys {
		delete(c.m, k)
	}
	for _, h := range t.hostKeys {
		delete(c.hosts, h)
	}
	for _, k := range t.metaKeys {
		delete(c.meta, k)
	}
}

// drop forgets everything.
func (c *leaseCache) drop() {
	clear(c.m)
	clear(c.hosts)
	clear(c.meta)
}

// cachedMeta returns the meta value of key the writer last read or wrote.
func (t *tx) cachedMeta(key string) (string, bool) {
	if t.cache == nil {
		return "", false
	}
	v, ok := t.cache.meta[key]
	return v, ok
}

// keepMeta records the meta value of key as read or written now.
func (t *tx) keepMeta(key, value string) {
	if t.cache == nil {
		return
	}
	t.cache.meta[key] = value
	t.metaKeys = append(t.metaKeys, key)
}

func (t *tx) hostKnown(host string) bool { return t.cache != nil && t.cache.hosts[host] }

func (t *tx) learnHost(host string) {
	if t.cache == nil {
		return
	}
	if len(t.cache.hosts) >= t.cache.max {
		clear(t.cache.hosts)
	}
	t.cache.hosts[host] = true
	t.hostKeys = append(t.hostKeys, host)
}

func (t *tx) forgetHosts() {
	if t.cache != nil {
		clear(t.cache.hosts)
	}
}

func (t *tx) cachedLease(id string) (cachedLease, bool) {
	if t.cache == nil {
		return cachedLease{}, false
	}
	e, ok := t.cache.m[id]
	return e, ok
}

func (t *tx) cacheLease(id string, tk warp.Ticket, l warp.Lease) {
	if t.cache == nil {
		return
	}
	t.cache.put(id, cachedLease{t: tk, l: l})
	t.touched(id)
}

func (t *tx) uncache(id string) {
	if t.cache == nil {
		return
	}
	delete(t.cache.m, id)
	t.touched(id)
}

// stored returns l as a read of its row returns it: every time as the
// column holds it (UTC nanoseconds, no monotonic reading), so a lease
// from the cache is the very value the database would give.
func stored(l warp.Lease) warp.Lease {
	for _, p := range []*time.Time{&l.ClaimedAt, &l.LastHeartbeatAt, &l.LastActivityAt, &l.FirstV2At,
		&l.RefreshedAt, &l.ExpiresAt, &l.ExitedAt, &l.EndedAt, &l.VerdictDueAt} {
		*p = fromNanos(nanos(*p))
	}
	return l
}
