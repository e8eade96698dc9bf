-- 0009: the newest events of some kinds (warp.Tx.RecentEvents: the
-- dashboard's recent lapses, releases and completions; the mode history).
-- Through events_kind_at (0008) SQLite read and sorted every event of those
-- kinds: 75 ms a dashboard page at 100k tickets. An index on kind alone is
-- (kind, id) in SQLite, so each kind's newest rows are read in order and
-- the read stops at the limit, for common kinds and rare ones alike.
CREATE INDEX IF NOT EXISTS events_kind ON events (kind);
