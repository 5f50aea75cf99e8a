"""What only the PostgreSQL account store has: a server that ends the app's session."""

import uuid

from app.store import accounts, postgres as db_postgres
from app.store.db import migrate


def test_postgres_connection_lost_is_one_503_then_a_fresh_connection(make_app, postgres_url, postgres_server):
    """The server ends the app's session (restart, failover, idle kill): that request is 503 and not counted,
    the next one opens a new connection and is served."""
    import psycopg
    from platform_helpers import assert_error

    name = "victim_" + uuid.uuid4().hex[:8]
    app = make_app(DATABASE_URL=f"{postgres_url}&application_name={name}")
    conn = db_postgres.connect(app.config["DATABASE_URL"])
    migrate(conn)
    row, key = accounts.create_account(conn, "lost@gent.be", "developer")
    conn.close()
    client = app.test_client()
    assert client.get("/api/v1/locations", headers={"Authorization": f"Bearer {key}"}).status_code == 200
    with psycopg.connect(postgres_server.url(), autocommit=True) as admin:
        killed = admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = %s",
            (name,),
        ).fetchone()[0]
    assert killed == 1
    assert_error(
        client.get("/api/v1/locations", headers={"Authorization": f"Bearer {key}"}),
        503,
        "service_unavailable",
    )
    resp = client.get("/api/v1/locations", headers={"Authorization": f"Bearer {key}"})
    assert (
        resp.status_code == 200 and resp.headers["X-RateLimit-Remaining"] == "98"
    )  # the 503 was not counted
