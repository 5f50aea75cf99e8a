-- Change alerts (app/dashboard/changealerts.py): e-mail and signed webhooks that follow the change feed
-- (docs/changes.md); one subscription per saved location, with the event types it sends.
CREATE TABLE change_subscriptions (
    id                 INTEGER PRIMARY KEY,
    account_id         INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    location_id        TEXT NOT NULL UNIQUE REFERENCES locations(id) ON DELETE CASCADE,
    types              TEXT NOT NULL,            -- JSON array of the event types sent
    email              INTEGER NOT NULL,         -- 1: mail the account's address
    webhook_url        TEXT,                     -- optional; CloudEvents POSTed there, signed with webhook_secret
    webhook_secret     TEXT,
    unsubscribe_token  TEXT NOT NULL UNIQUE,
    quiet_start        INTEGER,                  -- hour (Europe/Brussels) quiet hours begin; NULL: none
    quiet_end          INTEGER,                  -- hour they end
    digest             INTEGER NOT NULL,         -- 1: mails go out as one daily digest
    after_pos          INTEGER NOT NULL,         -- the change-feed position enqueued through
    created_at         TEXT NOT NULL
);
CREATE INDEX change_subscriptions_account ON change_subscriptions(account_id);

-- One row per (subscription, event, channel): the key makes each event go once per channel, across restarts.
CREATE TABLE change_deliveries (
    subscription_id  INTEGER NOT NULL REFERENCES change_subscriptions(id) ON DELETE CASCADE,
    event_id         TEXT NOT NULL,
    channel          TEXT NOT NULL CHECK (channel IN ('mail', 'webhook')),
    feed_pos         INTEGER NOT NULL,
    payload          TEXT NOT NULL,            -- the CloudEvent (JSON text), byte for byte the webhook body
    created_at       TEXT NOT NULL,
    sent_at          TEXT,
    attempts         INTEGER NOT NULL DEFAULT 0,
    claimed_at       INTEGER,                  -- epoch seconds a sender took it (a lease)
    next_attempt_at  INTEGER,                  -- epoch seconds: not before (retry, quiet hours, digest)
    last_error       TEXT,
    gave_up_at       TEXT,                     -- the dead letter
    dismissed_at     TEXT,                     -- dismissed from the failed deliveries by its owner
    PRIMARY KEY (subscription_id, event_id, channel)
) WITHOUT ROWID;
CREATE INDEX change_deliveries_pending ON change_deliveries(sent_at, next_attempt_at);

-- Calendar feeds (app/dashboard/calendar.py): a secret URL per saved location; only the token's SHA-256 kept.
CREATE TABLE calendar_feeds (
    id            INTEGER PRIMARY KEY,
    account_id    INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    location_id   TEXT NOT NULL REFERENCES locations(id) ON DELETE CASCADE,
    token_sha256  TEXT NOT NULL UNIQUE,
    created_at    TEXT NOT NULL,
    revoked_at    TEXT                      -- revoked feeds answer 410 Gone
);
CREATE INDEX calendar_feeds_location ON calendar_feeds(location_id);
