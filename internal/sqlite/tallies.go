package sqlite

import (
	"context"
	"strings"
	"time"

	"github.com/gyrum-labs/warp/internal/warp"
)

// tallyKey is the key of an event of warp.EventTally.
const tallyKey = `CASE WHEN kind IN ('verdict-changed', 'mode-changed') THEN coalesce(json_extract(data, '$.to'), '')
	ELSE coalesce(json_extract(data, '$.reason'), '') END`

// eventTalliesSQL is the tallies' query for the kinds' placeholders; the
// index events_kind_at answers it. Tests check its plan.
func eventTalliesSQL(marks string) string {
	return `SELECT at / 3600000000000 AS h, kind, ` + tallyKey + ` AS k, count(*) FROM events
		WHERE kind IN (` + marks + `) AND at >= ? GROUP BY h, kind, k ORDER BY h, kind, k LIMIT ?`
}

// EventTallies implements warp.Tx: a range read of events (kind, at) per kind.
func (t *tx) EventTallies(ctx context.Context, kinds []warp.EventKind, since time.Time, limit int) ([]warp.EventTally, error) {
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(kinds)), ", ")
	args := make([]any, 0, len(kinds)+2)
	for _, k := range kinds {
		args = append(args, string(k))
	}
	args = append(args, nanos(since), limitArg(limit))
	rows, err := t.query(ctx, eventTalliesSQL(marks), args...)
	if err != nil {
		return nil, translate("event tallies", err)
	}
	defer rows.Close()
	var out []warp.EventTally
	for rows.Next() {
		var h int64
		var e warp.EventTally
		var kind string
		if err := rows.Scan(&h, &kind, &e.Key, &e.N); err != nil {
			return nil, translate("event tallies", err)
		}
		e.Hour, e.Kind = time.Unix(h*3600, 0).UTC(), warp.EventKind(kind)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, translate("event tallies", err)
	}
	return out, nil
}

// qHostsBySchemaPerHour reads the hour rows of heartbeat_counts from the
// first hour (unix seconds) on: a range read of the index
// heartbeat_counts_span_bucket. Tests check its plan.
const qHostsBySchemaPerHour = `SELECT bucket, v, count(*) FROM (
		SELECT bucket, host, max(schema_version) AS v FROM heartbeat_counts
		WHERE span = 3600 AND bucket >= ? GROUP BY bucket, host)
	GROUP BY bucket, v ORDER BY bucket, v LIMIT ?`

// HostsBySchemaPerHour implements warp.Tx.
func (t *tx) HostsBySchemaPerHour(ctx context.Context, since time.Time, limit int) ([]warp.SchemaHour, error) {
	from := since.Unix() - since.Unix()%3600
	rows, err := t.query(ctx, qHostsBySchemaPerHour, from, limitArg(limit))
	if err != nil {
		return nil, translate("hosts by schema per hour", err)
	}
	defer rows.Close()
	var out []warp.SchemaHour
	for rows.Next() {
		var b int64
		var s warp.SchemaHour
		if err := rows.Scan(&b, &s.SchemaVersion, &s.Hosts); err != nil {
			return nil, translate("hosts by schema per hour", err)
		}
		s.Hour = time.Unix(b, 0).UTC()
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, translate("hosts by schema per hour", err)
	}
	return out, nil
}
