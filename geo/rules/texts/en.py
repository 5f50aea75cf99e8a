"""English texts (British spelling). Terms: WHO guideline value (WHO 2021 air quality guidelines), EU limit
value (Directive 2008/50/EC), low-emission zone, detour, road works."""

MESSAGES = {
    "decimal.separator": ".",
    # briefing headline
    "risk.low": "Low disruption",
    "risk.moderate": "Moderate disruption",
    "risk.high": "High disruption",
    "headline.stop": "{risk}: {works}, {transit}, {air}",
    "headline.no_stop": "{risk}: {works}, {air}; {fallback}",
    "works.none": "no road works in progress within {radius}",
    "works.one": "{n} road work in progress within {radius}",
    "works.many": "{n} road works in progress within {radius}",
    "transit.none": "no De Lijn detours",
    "transit.one": "{n} De Lijn detour",
    "transit.many": "{n} De Lijn detours",
    "transit.with_high": "{transit} ({high} high-impact)",
    "air.unknown": "NO2 unknown",
    "air.below_who": "NO2 below the WHO guideline value",
    "air.above_who": "NO2 above the WHO guideline value",
    "air.above_eu": "NO2 above the EU limit value",
    "fallback": "no stop within {m} m ({region} in the Antwerp region)",
    "region.none": "no detours",
    "region.one": "{n} detour",
    "region.many": "{n} detours",
    # briefing key facts
    "fact.stop": "Stop within {m} m: only detours of lines serving it, counted in the risk",
    "fact.no_stop.none": "No stop within {m} m and no detours in the Antwerp region",
    "fact.no_stop.one": (
        "No stop within {m} m: the only detour in the Antwerp region is shown, not counted in the risk"
    ),
    "fact.no_stop.many": (
        "No stop within {m} m: all {n} detours in the Antwerp region are shown, not counted in the risk"
    ),
    "fact.nearest": "Nearest road work in progress at {m} m",
    "fact.nearest.none": "No road works in progress within {radius}",
    "fact.upcoming.none": "No planned road works starting within 14 days",
    "fact.upcoming.one": "{n} planned road work starts within 14 days",
    "fact.upcoming.many": "{n} planned road works start within 14 days",
    "fact.high.none": "No high-impact detours",
    "fact.high.one": "{n} high-impact detour",
    "fact.high.many": "{n} high-impact detours",
    "fact.no2": "NO2 {value} µg/m³ measured at {station} ({id})",
    "fact.no2.none": "No NO2 measurement in the last two hours",
    "fact.lez.inside": "Inside the Antwerp low-emission zone",
    "fact.lez.outside": "Outside the Antwerp low-emission zone",
    # /air-quality
    "thresholds.note": "Annual-mean standards for NO2; comparing an hourly value with them is indicative only.",
    "threshold.who": "WHO guideline value (annual mean)",
    "threshold.eu": "EU limit value (annual mean)",
    "compliance.unknown": "Unknown: no measurement in the last two hours",
    "compliance.below_who": "Below the WHO guideline value",
    "compliance.above_who": "Above the WHO guideline value, below the EU limit value",
    "compliance.above_eu": "Above the EU limit value",
}
