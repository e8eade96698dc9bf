-- 0008: the dashboard's charts count events of some kinds over the last
-- hours or days (warp.Tx.EventTallies): a range read of (kind, at) instead
-- of every event of those kinds.
CREATE INDEX IF NOT EXISTS events_kind_at ON events (kind, at);
