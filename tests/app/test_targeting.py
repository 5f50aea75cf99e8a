"""Targeting parameters: locationId or lat+lng, each failure with its documented code, never a 500."""

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from werkzeug.datastructures import MultiDict

from app.api.targeting import parse_coordinate, resolve_target
from app.web.errors import ApiError
from app.store.saved_locations import add_location
from platform_helpers import INSIDE, OUTSIDE


@pytest.fixture
def ctx(make_app, box_engine, account, store):
    app = make_app(ENGINE=box_engine)
    row, _key = account("api")
    other, _ = account("api")
    add_location(
        store,
        row["id"],
        name="Stadhuis",
        address="Grote Markt 1",
        lat=51.2213,
        lng=4.3997,
        location_id="loc_mine",
    )
    add_location(store, other["id"], name="Elders", address="", lat=51.05, lng=3.72, location_id="loc_theirs")
    return app, row, box_engine


def resolve(ctx, query):
    app, row, engine = ctx
    with app.test_request_context("/api/v1/briefing", query_string=MultiDict(query)):
        from flask import g

        g.account = row
        return resolve_target(engine)


def code_of(ctx, query):
    try:
        resolve(ctx, query)
    except ApiError as exc:
        return exc.code
    return None


def test_coordinates_give_a_rounded_location(ctx):
    t = resolve(ctx, [("lat", "51.21941234"), ("lng", "4.40250001")])
    assert t.location_json() == {"lat": 51.219412, "lng": 4.4025}
    assert t.id is None


def test_saved_location_gives_id_and_name(ctx):
    t = resolve(ctx, [("locationId", "loc_mine")])
    assert t.location_json() == {"id": "loc_mine", "name": "Stadhuis", "lat": 51.2213, "lng": 4.3997}


@pytest.mark.parametrize(
    "query, code",
    [
        ([], "missing_target"),
        ([("lat", "51.2")], "missing_target"),
        ([("lng", "4.4")], "missing_target"),
        ([("lat", ""), ("lng", "")], "missing_target"),
        ([("lat", "nan"), ("lng", "4.4")], "invalid_coordinates"),
        ([("lat", "inf"), ("lng", "4.4")], "invalid_coordinates"),
        ([("lat", "1e400"), ("lng", "4.4")], "invalid_coordinates"),
        ([("lat", "5_1"), ("lng", "4.4")], "invalid_coordinates"),
        ([("lat", "0x33"), ("lng", "4.4")], "invalid_coordinates"),
        ([("lat", "90.0001"), ("lng", "4.4")], "invalid_coordinates"),
        ([("lat", "51.2"), ("lng", "-180.5")], "invalid_coordinates"),
        ([("lat", "51.2"), ("lat", "51.3"), ("lng", "4.4")], "invalid_coordinates"),
        ([("lat", "51,2"), ("lng", "4.4")], "invalid_coordinates"),
        ([("locationId", "loc_mine"), ("lat", "51.2")], "ambiguous_target"),
        ([("locationId", "loc_mine"), ("lat", "51.2"), ("lng", "4.4")], "ambiguous_target"),
        ([("locationId", "a"), ("locationId", "b")], "invalid_request"),
        ([("locationId", "loc_theirs")], "location_not_found"),
        ([("locationId", "loc_nope")], "location_not_found"),
        ([("lat", str(OUTSIDE[0])), ("lng", str(OUTSIDE[1]))], "outside_service_area"),
        ([("lat", "0"), ("lng", "0")], "outside_service_area"),
        ([("lat", str(INSIDE[0])), ("lng", str(INSIDE[1]))], None),
        ([("lat", "51.2"), ("lng", "+4.4")], None),
        ([("lat", " 51.2 "), ("lng", "4.4")], "invalid_coordinates"),  # no whitespace stripped
        ([("lat", "51.2\u00a0"), ("lng", "4.4")], "invalid_coordinates"),  # nor a no-break space
        ([("lat", "\uff15\uff11.2"), ("lng", "4.4")], "invalid_coordinates"),  # fullwidth ５１.2
        ([("lat", "5.12e1"), ("lng", "4.4")], None),
        ([("lat", "51.2"), ("lng", "4.4"), ("unknown", "x")], None),
    ],
)
def test_targeting_rules(ctx, query, code):
    assert code_of(ctx, query) == code


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lat=st.text(max_size=20), lng=st.text(max_size=20))
def test_any_text_gets_a_documented_code_never_a_crash(ctx, lat, lng):
    code = code_of(ctx, [("lat", lat), ("lng", lng)])
    assert code in {None, "missing_target", "invalid_coordinates", "outside_service_area"}


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lat=st.floats(allow_nan=True, allow_infinity=True), lng=st.floats(allow_nan=True, allow_infinity=True))
def test_float_coordinates_classified_by_range(ctx, lat, lng):
    code = code_of(ctx, [("lat", repr(lat)), ("lng", repr(lng))])
    finite = math.isfinite(lat) and math.isfinite(lng)
    if not finite or abs(lat) > 90 or abs(lng) > 180:
        assert code == "invalid_coordinates"
    else:
        inside = 50.6 <= lat <= 51.6 and 2.5 <= lng <= 6.0
        assert code == (None if inside else "outside_service_area")


def test_parse_coordinate_message_names_the_parameter():
    with pytest.raises(ApiError, match="lng='abc'"):
        parse_coordinate("lng", "abc", 180)


NON_ASCII_DIGITS = st.characters(categories=["Nd"]).filter(lambda c: not "0" <= c <= "9")


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    digits=st.lists(st.sampled_from("0123456789") | NON_ASCII_DIGITS, min_size=1, max_size=6), data=st.data()
)
def test_only_ascii_digits_make_a_coordinate(ctx, digits, data):
    """Fullwidth, Arabic-Indic, Devanagari … digits (all match ``\\d``) are invalid_coordinates."""
    lat = "".join(digits)
    if len(lat) > 1:
        lat = lat[:2] + "." + lat[2:]
    code = code_of(ctx, [("lat", lat), ("lng", "4.4")])
    if lat.isascii():
        assert code in {None, "outside_service_area", "invalid_coordinates"}
        assert code == ("invalid_coordinates" if float(lat) > 90 else code)
    else:
        assert code == "invalid_coordinates"


KEY = "uc_live_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6" + "Qr7St8"


@pytest.mark.parametrize(
    "query",
    [
        [("locationId", KEY)],
        [("locationId", KEY[8:40])],  # a fragment of a key, without its prefix
        [("lat", KEY), ("lng", "4.4")],
        [("lat", "51.2"), ("lng", KEY[:30])],
        [("locationId", "someone@stad.antwerpen.be")],
    ],
)
def test_error_messages_never_echo_a_key(ctx, query):
    with pytest.raises(ApiError) as info:
        resolve(ctx, query)
    message = info.value.message
    assert "[redacted]" in message
    for fragment in (KEY[8:24], KEY[20:36], "uc_live", "@stad"):
        assert fragment not in message


def test_short_harmless_values_are_still_named(ctx):
    with pytest.raises(ApiError, match="'loc_nope'"):
        resolve(ctx, [("locationId", "loc_nope")])
    with pytest.raises(ApiError, match="lat='51,2'"):
        resolve(ctx, [("lat", "51,2"), ("lng", "4.4")])
