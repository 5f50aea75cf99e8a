"""Dutch texts (the contract's language; the default). Byte-identical to the texts before catalogues."""

MESSAGES = {
    "decimal.separator": ",",
    # briefing headline
    "risk.low": "Weinig hinder",
    "risk.moderate": "Matige hinder",
    "risk.high": "Veel hinder",
    "headline.stop": "{risk}: {works}, {transit}, {air}",
    "headline.no_stop": "{risk}: {works}, {air}; {fallback}",
    "works.none": "geen werken in uitvoering binnen {radius}",
    "works.one": "{n} werk in uitvoering binnen {radius}",
    "works.many": "{n} werken in uitvoering binnen {radius}",
    "transit.none": "geen omleidingen van De Lijn",
    "transit.one": "{n} omleiding van De Lijn",
    "transit.many": "{n} omleidingen van De Lijn",
    "transit.with_high": "{transit} ({high} met grote hinder)",
    "air.unknown": "NO2 onbekend",
    "air.below_who": "NO2 onder de WHO-richtlijn",
    "air.above_who": "NO2 boven de WHO-richtlijn",
    "air.above_eu": "NO2 boven de EU-grenswaarde",
    "fallback": "geen halte binnen {m} m ({region} in de regio Antwerpen)",
    "region.none": "geen omleidingen",
    "region.one": "{n} omleiding",
    "region.many": "{n} omleidingen",
    # briefing key facts
    "fact.stop": "Halte binnen {m} m: alleen omleidingen van lijnen die er stoppen, meegeteld in het risico",
    "fact.no_stop.none": "Geen halte binnen {m} m en geen omleidingen in de regio Antwerpen",
    "fact.no_stop.one": (
        "Geen halte binnen {m} m: de enige omleiding in de regio Antwerpen getoond, "
        "niet meegeteld in het risico"
    ),
    "fact.no_stop.many": (
        "Geen halte binnen {m} m: alle {n} omleidingen in de regio Antwerpen getoond, "
        "niet meegeteld in het risico"
    ),
    "fact.nearest": "Dichtstbijzijnde werk in uitvoering op {m} m",
    "fact.nearest.none": "Geen werk in uitvoering binnen {radius}",
    "fact.upcoming.none": "Geen geplande werken die binnen 14 dagen starten",
    "fact.upcoming.one": "{n} gepland werk start binnen 14 dagen",
    "fact.upcoming.many": "{n} geplande werken starten binnen 14 dagen",
    "fact.high.none": "Geen omleidingen met grote hinder",
    "fact.high.one": "{n} omleiding met grote hinder",
    "fact.high.many": "{n} omleidingen met grote hinder",
    "fact.no2": "NO2 {value} µg/m³ gemeten in {station} ({id})",
    "fact.no2.none": "Geen NO2-meting in de laatste twee uur",
    "fact.lez.inside": "In de lage-emissiezone Antwerpen",
    "fact.lez.outside": "Buiten de lage-emissiezone Antwerpen",
    # /air-quality
    "thresholds.note": "Jaargemiddelde normen voor NO2; de vergelijking met een uurwaarde is indicatief.",
    "threshold.who": "WHO-richtlijn (jaargemiddelde)",
    "threshold.eu": "EU-grenswaarde (jaargemiddelde)",
    "compliance.unknown": "Onbekend: geen meting in de laatste twee uur",
    "compliance.below_who": "Onder de WHO-richtlijn",
    "compliance.above_who": "Boven de WHO-richtlijn, onder de EU-grenswaarde",
    "compliance.above_eu": "Boven de EU-grenswaarde",
}
