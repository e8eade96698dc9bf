-- 0009: the ticket state 'cancelled' (an operator's cancel, issue 46), and
-- the name a dashboard session signed in with (its writes record it).
ALTER TABLE tickets DROP CONSTRAINT IF EXISTS tickets_state_check;
ALTER TABLE tickets ADD CONSTRAINT tickets_state_check CHECK (state IN ('open', 'claimed', 'completed', 'cancelled'));
ALTER TABLE sessions ADD COLUMN IF NOT EXISTS name text NOT NULL DEFAULT '';
