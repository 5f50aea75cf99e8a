-- Portal sign-in sessions (app/portal/sessions.py). The signed cookie carries a random session id; only its
-- SHA-256 digest is stored. Signing out deletes the row, so a replayed cookie is worthless at once.
-- Times are UTC epoch seconds.
CREATE TABLE portal_sessions (
    digest      TEXT PRIMARY KEY,             -- hex SHA-256 of the session id
    account_id  INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL
);
CREATE INDEX portal_sessions_expiry ON portal_sessions(expires_at);
