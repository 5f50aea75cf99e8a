-- Single-use e-mail link tokens for sign-up and portal sign-in (app/tokens.py).
-- Only the SHA-256 digest of a token is stored; times are UTC epoch seconds.
CREATE TABLE email_tokens (
    digest       TEXT PRIMARY KEY,             -- hex SHA-256 of the token; the token itself is never stored
    email        TEXT NOT NULL COLLATE NOCASE,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    consumed_at  INTEGER
) WITHOUT ROWID;
CREATE INDEX email_tokens_expiry ON email_tokens(expires_at);
