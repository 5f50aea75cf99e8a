-- Accounts, API keys (digests only), saved locations and daily usage.
CREATE TABLE accounts (
    id          INTEGER PRIMARY KEY,
    email       TEXT NOT NULL UNIQUE COLLATE NOCASE,
    plan        TEXT NOT NULL,
    created_at  TEXT NOT NULL
);

CREATE TABLE api_keys (
    id          INTEGER PRIMARY KEY,
    account_id  INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    digest      TEXT NOT NULL UNIQUE,          -- hex SHA-256 of the key; the key itself is never stored
    prefix      TEXT NOT NULL,                 -- display prefix, e.g. uc_live_Ab12Cd
    created_at  TEXT NOT NULL,
    revoked_at  TEXT
);
CREATE INDEX api_keys_account ON api_keys(account_id);

CREATE TABLE locations (
    id          TEXT PRIMARY KEY,
    account_id  INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    name        TEXT NOT NULL,
    address     TEXT NOT NULL,
    lat         REAL NOT NULL,
    lng         REAL NOT NULL,
    label       TEXT NOT NULL,
    is_primary  INTEGER NOT NULL DEFAULT 0 CHECK (is_primary IN (0, 1)),
    created_at  TEXT NOT NULL
);
CREATE INDEX locations_account ON locations(account_id);
CREATE UNIQUE INDEX locations_one_primary ON locations(account_id) WHERE is_primary = 1;

CREATE TABLE usage (
    account_id  INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    day         TEXT NOT NULL,                 -- UTC calendar day, YYYY-MM-DD
    count       INTEGER NOT NULL CHECK (count >= 0),
    PRIMARY KEY (account_id, day)
) WITHOUT ROWID;
