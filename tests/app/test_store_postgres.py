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


def test_the_psycopg_layer_the_store_runs_on(postgres_url):
    """PostgresStore runs below psycopg's cursors (docs/operations.md, PostgreSQL store): what it relies on
    of psycopg's libpq layer, pinned, so an upgrade that changes it fails here and not in production."""
    import psycopg
    from psycopg import adapt, errors, pq

    with psycopg.connect(postgres_url, autocommit=True, prepare_threshold=None) as raw:
        pgconn, tx = raw.pgconn, adapt.Transformer(raw)
        formats = [adapt.PyFormat.TEXT] * 2
        assert (
            pgconn.prepare(b"pin", b"SELECT $1::text AS a, $2::bigint AS b").status
            == pq.ExecStatus.COMMAND_OK
        )
        result = pgconn.exec_prepared(b"pin", tx.dump_sequence(["x", 7], formats))
        assert result.status == pq.ExecStatus.TUPLES_OK and (result.ntuples, result.nfields) == (1, 2)
        assert [result.fname(i).decode() for i in range(result.nfields)] == ["a", "b"]
        tx.set_pgresult(result)
        assert tx.load_rows(0, result.ntuples, tuple) == [("x", 7)]
        pgconn.exec_(b"CREATE TEMP TABLE pin (x int PRIMARY KEY)")
        done = pgconn.exec_params(b"INSERT INTO pin VALUES ($1), ($2)", tx.dump_sequence([1, 2], formats))
        assert done.status == pq.ExecStatus.COMMAND_OK and done.command_tuples == 2
        clash = pgconn.exec_params(b"INSERT INTO pin VALUES ($1)", tx.dump_sequence([1], formats[:1]))
        assert clash.status == pq.ExecStatus.FATAL_ERROR
        error = errors.error_from_result(clash, encoding=raw.info.encoding)
        assert isinstance(error, errors.UniqueViolation) and isinstance(error, psycopg.IntegrityError)
