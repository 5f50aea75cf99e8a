"""What each upstream source is: label, default URL, attribution and licence, the layers it feeds, cache
expiries.

This table is the single place ``docs/sources.md``, the freshness check, the error messages and the
``sources`` member of the data answers (:mod:`app.sources.provenance`) read from.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Source:
    """One upstream source."""

    name: str
    label: str
    default_url: str
    url_setting: str
    licence: str  # the licence's name, as the answers state it
    layers: tuple[str, ...]
    attribution: str = ""  # the credit line the licence asks for (Dutch, as the publisher words it)
    expiry: dict[str, int] = field(default_factory=dict)  # cache expiry (s) per kind of request


SOURCES: dict[str, Source] = {
    s.name: s
    for s in (
        Source(
            name="gipod",
            label="GIPOD (wegenwerkenregister, Digitaal Vlaanderen)",
            default_url="https://geo.api.vlaanderen.be/GIPOD/ogc/features/v1",
            url_setting="URBAN_GIPOD_URL",
            licence="Modellicentie Gratis Hergebruik v1.0",
            attribution="Bron: GIPOD, Digitaal Vlaanderen",
            layers=("works",),
            expiry={"works": 900},
        ),
        Source(
            name="delijn",
            label="De Lijn Kern Open Data (vervoersmaatschappij)",
            default_url="https://api.delijn.be/DLKernOpenData/api/v1",
            url_setting="URBAN_DELIJN_URL",
            licence="De Lijn open data: gebruiksvoorwaarden van het De Lijn dataportaal (data.delijn.be)",
            attribution="Bron: De Lijn",
            layers=("stops", "detours"),
            expiry={"stops": 86400, "lines": 86400, "detours": 60},
        ),
        Source(
            name="ircel",
            label="IRCEL-CELINE SOS timeseries API (luchtkwaliteitsnetwerk)",
            default_url="https://geo.irceline.be/sos/api/v1",
            url_setting="URBAN_IRCEL_URL",
            licence="CC BY 4.0",
            attribution="Bron: IRCEL-CELINE",
            layers=("stations", "no2"),
            expiry={"stations": 86400, "timeseries": 3600, "no2": 60},
        ),
        Source(
            name="lez",
            label="Stad Antwerpen geodata (lage-emissiezone, ArcGIS REST)",
            default_url=(
                "https://geodata.antwerpen.be/arcgissql/rest/services/P_Portal/portal_publiek4/MapServer/283"
            ),
            url_setting="URBAN_LEZ_URL",
            licence="Modellicentie Gratis Hergebruik v1.0",
            attribution="Bron: Stad Antwerpen",
            layers=("lez",),
            expiry={"lez": 604800},
        ),
        Source(
            name="boundary",
            label="Gewestgrenzen (Vlaams en Brussels Hoofdstedelijk Gewest, WFS/OGC API Features GeoJSON)",
            default_url="",  # no default: set URBAN_BOUNDARY_URL (candidates in docs/sources.md)
            url_setting="URBAN_BOUNDARY_URL",
            licence="licence of the configured official source (FPS Finance AAPD open-data licence or "
            "NGI open data; see docs/sources.md)",
            layers=("service_area",),
            expiry={"boundary": 30 * 86400},
        ),
    )
}

# layer -> source name (river always comes from the reference directory; service_area too unless
# URBAN_BOUNDARY_URL is set)
LAYER_SOURCE: dict[str, str] = {layer: s.name for s in SOURCES.values() for layer in s.layers}
