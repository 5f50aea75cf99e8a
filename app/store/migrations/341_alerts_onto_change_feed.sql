-- The four old alert kinds (alert_subscriptions, evaluated after each refresh) move onto the change feed
-- (docs/changes.md, "From the old alerts"): the old subscriptions of a saved location become its one change
-- alert, e-mail on, with the event types of their kinds (work_running: work.started, detour_new:
-- detour.started, no2_eu: no2.above_eu, no2_who: no2.above_who; app/dashboard/changealerts.LEGACY_TYPES),
-- the unsubscribe token, webhook URL and secret of its first subscription (the first with a webhook for
-- those two), starting at the feed's head (after_pos -1: set at the next enqueue, nothing before is sent).
-- A location that already has a change alert keeps it as it is. Every old subscription id and unsubscribe
-- token stays reachable through change_alert_legacy (old links and dashboard routes keep working).
CREATE TABLE change_alert_legacy (
    old_id             INTEGER NOT NULL,         -- the old alert_subscriptions.id (/dashboard/alerts/<id>/...)
    subscription_id    INTEGER NOT NULL REFERENCES change_subscriptions(id) ON DELETE CASCADE,
    kind               TEXT NOT NULL,            -- the old kind
    unsubscribe_token  TEXT NOT NULL UNIQUE,     -- the old link's token
    PRIMARY KEY (old_id)
) WITHOUT ROWID;
CREATE INDEX change_alert_legacy_subscription ON change_alert_legacy(subscription_id);

INSERT INTO change_subscriptions (account_id, location_id, types, email, webhook_url, webhook_secret,
    unsubscribe_token, quiet_start, quiet_end, digest, after_pos, created_at)
SELECT s.account_id, s.location_id, '[' || substr(k.list, 1, length(k.list) - 2) || ']', 1,
    w.webhook_url, w.webhook_secret, s.unsubscribe_token, NULL, NULL, 0, -1, k.created_at
FROM (
    SELECT location_id, MIN(id) AS first_id, MIN(created_at) AS created_at,
        (CASE WHEN MAX(CASE WHEN kind = 'work_running' THEN 1 ELSE 0 END) = 1 THEN '"work.started", ' ELSE '' END)
        || (CASE WHEN MAX(CASE WHEN kind = 'detour_new' THEN 1 ELSE 0 END) = 1 THEN '"detour.started", ' ELSE '' END)
        || (CASE WHEN MAX(CASE WHEN kind = 'no2_eu' THEN 1 ELSE 0 END) = 1 THEN '"no2.above_eu", ' ELSE '' END)
        || (CASE WHEN MAX(CASE WHEN kind = 'no2_who' THEN 1 ELSE 0 END) = 1 THEN '"no2.above_who", ' ELSE '' END)
        AS list
    FROM alert_subscriptions GROUP BY location_id
) k
JOIN alert_subscriptions s ON s.id = k.first_id
LEFT JOIN alert_subscriptions w ON w.id = (
    SELECT MIN(x.id) FROM alert_subscriptions x WHERE x.location_id = k.location_id AND x.webhook_url IS NOT NULL
)
WHERE NOT EXISTS (SELECT 1 FROM change_subscriptions c WHERE c.location_id = k.location_id)
ORDER BY k.first_id;

INSERT INTO change_alert_legacy (old_id, subscription_id, kind, unsubscribe_token)
SELECT s.id, c.id, s.kind, s.unsubscribe_token
FROM alert_subscriptions s JOIN change_subscriptions c ON c.location_id = s.location_id;

DROP TABLE alert_events;
DROP TABLE alert_subscriptions;
