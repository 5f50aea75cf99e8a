-- Alert delivery retries (app/dashboard/delivery.py): when a failed event is due again, why its last attempt
-- failed, and when delivery gave up on it (the dead letter, after MAX_ATTEMPTS attempts).
ALTER TABLE alert_events ADD COLUMN next_attempt_at INTEGER;  -- epoch seconds; NULL: due now
ALTER TABLE alert_events ADD COLUMN last_error TEXT;
ALTER TABLE alert_events ADD COLUMN gave_up_at TEXT;
