-- 0006: the held leases whose recorded verdict is not active, for listing a
-- rare verdict (GET /v1/tickets?verdict=stalled, the dashboard's filter)
-- without walking every claimed ticket. Active is left out (and '', a lease
-- whose verdict was never recorded: active too), so an active
-- lease's heartbeat, which writes recorded_verdict again, never touches it.
CREATE INDEX IF NOT EXISTS leases_held_rare_verdict ON leases (recorded_verdict, ticket)
    WHERE state = 'held' AND recorded_verdict NOT IN ('', 'active');
