"""One language per screen (issue 30, item 6) for the pages added with the change feed and the dossier: a
Pro user who chose French gets the change section of a location, its flash messages, the failed deliveries
and the evidence dossier's form without one English label of ours; upstream values stay as published.
(The "as of" control in French: tests/dashboard/test_as_of_control.py.)"""

from __future__ import annotations

import html

import pytest

from app import create_app
from app.dashboard import changealerts, run
from app.store.db import open_store

from . import receivers
from .alerting import Clock
from .changefeed import head, pro_location, publish, shared_variant_dirs
from .conftest import CSRF, signed_in
from .receivers import Receiver

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def dirs(snapshot_dir, engine, build_once):
    return shared_variant_dirs(snapshot_dir, engine, build_once)


@pytest.fixture
def feed_app(config):
    return create_app({**config, "WALL_CLOCK": Clock()})


def in_french(app, account_id):
    """A signed-in client whose browser asks for English but who chose French with the switcher."""
    client = signed_in(app, account_id)
    assert client.get("/dashboard/language/fr?next=/dashboard/").status_code == 302
    return client


def text_of(resp) -> str:
    return html.unescape(resp.get_data(as_text=True))


def assert_french(page: str, english: list[str], french: list[str]):
    left = [s for s in english if s in page]
    assert not left, left
    missing = [s for s in french if s not in page]
    assert not missing, missing


def test_the_change_section_deliveries_and_their_messages_speak_french(feed_app, dirs, smtp_server):
    failing = Receiver(receivers.status(500))
    try:
        account, loc = pro_location(feed_app, "fr@stad.be")
        publish(feed_app, dirs["before"])
        conn = open_store(feed_app)
        with feed_app.app_context():
            changealerts.save(
                conn,
                account["id"],
                loc,
                types=["work.started", "detour.started", "no2.above_eu"],
                email=False,
                webhook_url=failing.url(),
                quiet_start=22,
                quiet_end=7,
                head=head(feed_app),
            )
        conn.close()
        events = publish(feed_app, dirs["after"])
        assert {"work.started", "detour.started"} <= {e.type for e in events}
        run.enqueue_changes(feed_app)
        assert run.deliver_due(feed_app)[0]["failed"] == 1
        client = in_french(feed_app, account["id"])
        assert (
            client.post(f"/dashboard/locations/{loc['id']}/calendar", data={"csrf_token": CSRF}).status_code
            == 200
        )

        page = text_of(client.get(f"/dashboard/map?location={loc['id']}"))
        assert 'data-testid="change"' in page and 'data-testid="failed-link"' in page
        assert_french(
            page,
            [
                "What changed here",
                "newest first",
                "Holds from",
                "A road work starts running",
                "A De Lijn detour starts hitting",
                "failed deliver",
                "of your change alerts",
                "Calendar feed",
                "A calendar URL exists",
                "Revoke the calendar URL",
                "Sending 3 kinds",
                "quiet 22:00",
                "Send me these changes",
                "By e-mail to",
                "Quiet hours",
                "Also POST each change",
                "Save the change alert",
                "Remove the change alert",
                " UTC",
            ],
            [
                "Ce qui a changé ici",
                "Vaut à partir de",
                "Un chantier commence : chantier ",
                "Une déviation De Lijn commence à toucher le lieu : déviation ",
                "1 envoi échoué",
                "Flux d'agenda",
                "Une URL d'agenda existe",
                "Envoie 3 types de changements vers",
                "silence 22:00–7:00 heure de Bruxelles",
                "M'envoyer ces changements",
                "Enregistrer l'alerte de changement",
                "Le NO2 dépasse la valeur limite de l'UE (40 µg/m³)",
            ],
        )

        deliveries = text_of(client.get("/dashboard/deliveries"))
        assert 'data-testid="failed-delivery"' in deliveries
        assert_french(
            deliveries,
            ["Failed deliveries", "Last error", "Attempts", ">Retry<", ">Dismiss<", "retrying", "given up"],
            [
                "Envois échoués",
                "Dernière erreur",
                "Tentatives",
                "Réessayer",
                "Écarter",
                "en cours de nouvel essai",
            ],
        )

        # flash messages: a refused alert (our reason in French), a retry, a revoke
        refused = client.post(
            f"/dashboard/locations/{loc['id']}/change-alert", data={"csrf_token": CSRF, "email": "on"}
        )
        page = text_of(client.get(refused.headers["Location"]))
        assert_french(
            page,
            ["Change alert not changed", "choose at least one kind of change"],
            ["Alerte de changement non modifiée : choisissez au moins un type de changement."],
        )
        conn = open_store(feed_app)
        row = conn.execute("SELECT * FROM change_deliveries").fetchone()
        conn.close()
        key = {"csrf_token": CSRF, "subscription_id": row["subscription_id"], "event_id": row["event_id"]}
        done = client.post("/dashboard/deliveries/retry", data={**key, "channel": row["channel"]})
        assert_french(text_of(client.get(done.headers["Location"])), ["Retried:"], ["Réessayé :"])
        gone = client.post("/dashboard/deliveries/dismiss", data={**key, "channel": "nope"})
        assert_french(text_of(client.get(gone.headers["Location"])), ["Nothing to do"], ["Rien à faire"])
        revoked = client.post(f"/dashboard/locations/{loc['id']}/calendar/revoke", data={"csrf_token": CSRF})
        assert_french(
            text_of(client.get(revoked.headers["Location"])),
            ["Calendar URL revoked"],
            ["URL d'agenda révoquée"],
        )
    finally:
        failing.close()


def test_the_dossier_form_and_its_refusals_speak_french(app, user, store):
    from app.store.saved_locations import add_location

    from .alerting import POINT

    account, _key, _client = user("pro")
    loc = add_location(store, account["id"], name="Kantoor", address="", lat=POINT[0], lng=POINT[1])
    client = in_french(app, account["id"])
    page = text_of(client.get(f"/dashboard/locations/{loc['id']}/dossier"))
    assert 'data-testid="dossier-form"' in page
    assert_french(
        page,
        [
            "Evidence dossier",
            "For a period of whole days",
            "days back",
            "first day",
            "Radius for road works",
            "Download the PDF",
            "Download the bundle",
            "Back to the map",
        ],
        [
            "Dossier de preuves : Kantoor",
            "remonte 30 jours en arrière",
            "Rayon pour les chantiers",
            "Télécharger le PDF",
            "Télécharger le paquet (zip)",
            "Retour à la carte de Kantoor",
        ],
    )
    bad = client.get(f"/dashboard/locations/{loc['id']}/dossier.pdf?from=2026-11-10&to=2026-11-01")
    assert bad.status_code == 400
    # our sentence in French; the API's exact message and its code beside it as the technical detail
    assert_french(
        text_of(bad),
        ["Evidence dossier"],
        ["La période n'est pas une suite de jours valable.", "to=2026-11-01 is before", "(invalid_window)"],
    )
    other, _key, _client = user("dashboard")
    theirs = add_location(store, other["id"], name="X", address="", lat=POINT[0], lng=POINT[1])
    refused = in_french(app, other["id"]).get(f"/dashboard/locations/{theirs['id']}/dossier")
    assert refused.status_code == 403
    assert_french(
        text_of(refused),
        ["Evidence dossiers are part of", "Pro plan needed"],
        ["Les dossiers de preuves font partie", "Formule Pro requise"],
    )
