package sqlite

import (
	"context"
	"encoding/binary"
	"strings"

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
	version int64             // data_version at the last check; -1 before any
	m       map[string]string // packed cachedLease by ticket id (packLease)
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
	return &leaseCache{version: -1, m: map[string]string{}, max: max, hosts: map[string]bool{}, meta: map[string]string{}}
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

func (c *leaseCache) put(id string, e string) {
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
	p, ok := t.cache.m[id]
	if !ok {
		return cachedLease{}, false
	}
	return unpackLease(p), true
}

func (t *tx) cacheLease(id string, tk warp.Ticket, l warp.Lease) {
	if t.cache == nil {
		return
	}
	t.cache.put(id, packLease(tk, l))
	t.touched(id)
}

// An entry is a ticket (without labels) and its lease packed into one
// string: the numbers and times (as stored: UTC nanoseconds) as uvarints,
// then the strings, each after its length, so a cached lease comes back as
// a read of its row gives it (no monotonic reading, UTC, the nanosecond the
// column holds). A Ticket and a Lease hold ~35
// pointers (strings, and times' locations) that every garbage collection
// marks; 100k entries were ~60 MB of the heap to scan, and the collection
// that ran every second or so under 4,000 heartbeats a second slowed the
// heartbeats it overlapped (p99 11-15 ms, 7 ms with collections four times
// rarer). Packed, an entry is its key and one string whose bytes the
// collector does not scan. Unpacked, a lease's strings share the packed
// string's memory.

// packLease packs tk (its labels left out) and l.
func packLease(tk warp.Ticket, l warp.Lease) string {
	var b strings.Builder
	b.Grow(160 + len(tk.ID) + len(tk.Title) + len(l.Ticket) + len(l.Agent) + len(l.Host) + len(l.InFlight) +
		len(l.Claimant) + len(l.SecretHash) + len(l.Exit) + len(l.EndReason) + len(l.PRURL))
	var v [binary.MaxVarintLen64]byte
	for _, n := range [...]int64{tk.Seq, tk.Epoch, nanos(tk.CreatedAt), nanos(tk.UpdatedAt),
		l.Epoch, int64(l.SchemaVersion), l.HookEvents, boolInt(l.FallbackExtended),
		nanos(l.ClaimedAt), nanos(l.LastHeartbeatAt), nanos(l.LastActivityAt), nanos(l.FirstV2At),
		nanos(l.RefreshedAt), nanos(l.ExpiresAt), nanos(l.ExitedAt), nanos(l.EndedAt), nanos(l.VerdictDueAt)} {
		b.Write(binary.AppendUvarint(v[:0], uint64(n)))
	}
	for _, s := range [...]string{tk.ID, tk.Title, string(tk.State),
		l.Ticket, l.Agent, l.Host, string(l.State), l.InFlight, l.Claimant, l.SecretHash,
		l.Exit, l.EndReason, l.PRURL, string(l.HookSeen), string(l.RecordedVerdict)} {
		b.Write(binary.AppendUvarint(v[:0], uint64(len(s))))
		b.WriteString(s)
	}
	return b.String()
}

// unpackLease is the inverse of packLease. p is always packLease's: a
// malformed p is a bug, and panics.
func unpackLease(p string) cachedLease {
	num := func() int64 {
		var u uint64
		for shift := 0; ; shift += 7 {
			c := p[0]
			p = p[1:]
			u |= uint64(c&0x7f) << shift
			if c < 0x80 {
				return int64(u)
			}
		}
	}
	str := func() string {
		n := num()
		s := p[:n]
		p = p[n:]
		return s
	}
	var e cachedLease
	tk, l := &e.t, &e.l
	tk.Seq, tk.Epoch, tk.CreatedAt, tk.UpdatedAt = num(), num(), fromNanos(num()), fromNanos(num())
	l.Epoch, l.SchemaVersion, l.HookEvents, l.FallbackExtended = num(), int(num()), num(), num() == 1
	l.ClaimedAt, l.LastHeartbeatAt, l.LastActivityAt, l.FirstV2At = fromNanos(num()), fromNanos(num()), fromNanos(num()), fromNanos(num())
	l.RefreshedAt, l.ExpiresAt, l.ExitedAt, l.EndedAt, l.VerdictDueAt = fromNanos(num()), fromNanos(num()), fromNanos(num()), fromNanos(num()), fromNanos(num())
	tk.ID, tk.Title, tk.State = str(), str(), warp.TicketState(str())
	l.Ticket, l.Agent, l.Host, l.State, l.InFlight, l.Claimant, l.SecretHash = str(), str(), str(), warp.LeaseState(str()), str(), str(), str()
	l.Exit, l.EndReason, l.PRURL, l.HookSeen, l.RecordedVerdict = str(), str(), str(), warp.HookSeen(str()), warp.Verdict(str())
	return e
}

func (t *tx) uncache(id string) {
	if t.cache == nil {
		return
	}
	delete(t.cache.m, id)
	t.touched(id)
}
