-- Recomputing expiry (a mode change, a new lease window) and the verdict
-- thresholds walks the held leases in ticket order and locks them as it
-- goes. Heartbeat batches lock in byte order (COLLATE "C"); the walk used
-- the database's collation, which on an en_US or ICU database orders
-- "T-2" and "t-1" (or "a_b" and "a-c") the other way: a mode change and a
-- batch could deadlock. The walk now uses byte order too, on this index.
DROP INDEX IF EXISTS leases_held_ticket;
CREATE INDEX leases_held_ticket ON leases (ticket COLLATE "C") WHERE state = 'held';
