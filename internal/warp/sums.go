package warp

import "time"

// Adoption counts are kept in two spans of buckets, each row a host's
// heartbeats of one schema version in one bucket: a minute row and an
// hour row for every heartbeat. A window's counts are its whole hours'
// rows plus the minute rows of its first, partial hour (CountWindow), so
// a read touches at most ~60 minute rows and one row an hour per host and
// schema version, however many heartbeats the window held. (One-second
// buckets, before, made the rows and the read grow with time × hosts:
// 86 M rows a day at 1,000 busy hosts, ~9 s to read a day.) The price: a
// window's counts start at the minute that holds its start, up to 59 s
// early — which keeps the activity-mode check on the safe side.
const (
	// MinuteSpan and HourSpan are the widths of the two kinds of count
	// buckets, in seconds (the span column of heartbeat_counts).
	MinuteSpan int64 = 60
	HourSpan   int64 = 3600
)

// floorTo is t (unix seconds) rounded down to a multiple of span.
func floorTo(t, span int64) int64 {
	r := t % span
	if r < 0 {
		r += span
	}
	return t - r
}

// CountWindow says which count rows cover the window that starts at
// since: the minute rows with minuteFrom <= bucket < hourFrom, and the
// hour rows with bucket >= hourFrom. minuteFrom is the start of since's
// minute, hourFrom the first hour boundary at or after it.
func CountWindow(since time.Time) (minuteFrom, hourFrom int64) {
	minuteFrom = floorTo(since.Unix(), MinuteSpan)
	hourFrom = floorTo(minuteFrom+HourSpan-1, HourSpan)
	return minuteFrom, hourFrom
}

// HeartbeatSum is the heartbeats of one host and schema version in one
// count bucket of width Span (MinuteSpan or HourSpan) starting at Bucket
// (unix seconds), summed over a batch.
type HeartbeatSum struct {
	Host          string
	SchemaVersion int
	Span, Bucket  int64
	N             int64
}

// HostSeen is what a batch's counts leave in one host's row, as
// RecordHeartbeat would count by count: a new row takes the token of the
// host's first count; the row gets the schema version and time of its
// last count (a stored row keeps a newer time).
type HostSeen struct {
	Host, Token   string
	SchemaVersion int
	At            time.Time
}

// CountRows returns the two count rows that c adds to: its minute's and
// its hour's.
func CountRows(c HeartbeatCount) [2]HeartbeatSum {
	at := c.At.Unix()
	return [2]HeartbeatSum{
		{Host: c.Host, SchemaVersion: c.SchemaVersion, Span: MinuteSpan, Bucket: floorTo(at, MinuteSpan), N: c.N},
		{Host: c.Host, SchemaVersion: c.SchemaVersion, Span: HourSpan, Bucket: floorTo(at, HourSpan), N: c.N},
	}
}

// SumHeartbeats folds the counts of a batch (a store's
// RecordHeartbeats) into one sum per count row (host, schema version,
// span, bucket: CountRows) and one row per host, each in order of first
// appearance. No two sums share a row, as one PostgreSQL upsert needs.
func SumHeartbeats(cs []HeartbeatCount) ([]HeartbeatSum, []HostSeen) {
	type key struct {
		host         string
		schema       int
		span, bucket int64
	}
	at := map[key]int{}
	var sums []HeartbeatSum
	seen := map[string]int{}
	var hosts []HostSeen
	for _, c := range cs {
		for _, r := range CountRows(c) {
			k := key{r.Host, r.SchemaVersion, r.Span, r.Bucket}
			if i, ok := at[k]; ok {
				sums[i].N += r.N
			} else {
				at[k] = len(sums)
				sums = append(sums, r)
			}
		}
		if i, ok := seen[c.Host]; !ok {
			seen[c.Host] = len(hosts)
			hosts = append(hosts, HostSeen{Host: c.Host, Token: c.Token, SchemaVersion: c.SchemaVersion, At: c.At})
		} else if !c.At.Before(hosts[i].At) {
			hosts[i].SchemaVersion, hosts[i].At = c.SchemaVersion, c.At
		}
	}
	return sums, hosts
}
