-- Dashboard alerts (app/dashboard/alerts.py): subscriptions per saved location and every event they produced.
CREATE TABLE alert_subscriptions (
    id                 INTEGER PRIMARY KEY,
    account_id         INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    location_id        TEXT NOT NULL REFERENCES locations(id) ON DELETE CASCADE,
    kind               TEXT NOT NULL CHECK (kind IN ('no2_eu', 'no2_who', 'work_running', 'detour_new')),
    webhook_url        TEXT,                   -- optional; events are POSTed there, signed with webhook_secret
    webhook_secret     TEXT,
    unsubscribe_token  TEXT NOT NULL UNIQUE,   -- random; the e-mailed unsubscribe link carries it
    no2_above          INTEGER,                -- NO2 kinds: was the reading above the figure at the last evaluation
    created_at         TEXT NOT NULL,
    UNIQUE (location_id, kind)
);
CREATE INDEX alert_subscriptions_account ON alert_subscriptions(account_id);

-- One row per (subscription, event key): the key makes each event exist once, across restarts.
-- kind 'baseline' = already true when the subscription was made (never sent); 'event' = to deliver.
CREATE TABLE alert_events (
    subscription_id  INTEGER NOT NULL REFERENCES alert_subscriptions(id) ON DELETE CASCADE,
    event_key        TEXT NOT NULL,
    kind             TEXT NOT NULL CHECK (kind IN ('baseline', 'event')),
    payload          TEXT NOT NULL,            -- the JSON body sent to the webhook
    created_at       TEXT NOT NULL,
    mail_sent_at     TEXT,
    webhook_sent_at  TEXT,
    attempts         INTEGER NOT NULL DEFAULT 0,
    claimed_at       INTEGER,                  -- epoch seconds a sender took it (a lease: a crashed sender's claim expires)
    PRIMARY KEY (subscription_id, event_key)
) WITHOUT ROWID;
