"""French texts (Brussels usage). Terms: valeur guide de l'OMS (WHO guideline value), valeur limite de l'UE
(EU limit value, directive 2008/50/CE), zone de basses émissions (LEZ), déviation (detour), chantier (road
work). French typography: a no-break space before ``:`` and ``;``."""

MESSAGES = {
    "decimal.separator": ",",
    # briefing headline
    "risk.low": "Peu de perturbations",
    "risk.moderate": "Perturbations modérées",
    "risk.high": "Fortes perturbations",
    "headline.stop": "{risk}\u00a0: {works}, {transit}, {air}",
    "headline.no_stop": "{risk}\u00a0: {works}, {air}\u00a0; {fallback}",
    "works.none": "aucun chantier en cours dans un rayon de {radius}",
    "works.one": "{n} chantier en cours dans un rayon de {radius}",
    "works.many": "{n} chantiers en cours dans un rayon de {radius}",
    "transit.none": "aucune déviation De Lijn",
    "transit.one": "{n} déviation De Lijn",
    "transit.many": "{n} déviations De Lijn",
    "transit.with_high": "{transit} (dont {high} à fort impact)",
    "air.unknown": "NO2 inconnu",
    "air.below_who": "NO2 sous la valeur guide de l'OMS",
    "air.above_who": "NO2 au-dessus de la valeur guide de l'OMS",
    "air.above_eu": "NO2 au-dessus de la valeur limite de l'UE",
    "fallback": "aucun arrêt à moins de {m} m ({region} dans la région d'Anvers)",
    "region.none": "aucune déviation",
    "region.one": "{n} déviation",
    "region.many": "{n} déviations",
    # briefing key facts
    "fact.stop": (
        "Arrêt à moins de {m} m\u00a0: seules les déviations des lignes qui le desservent, "
        "prises en compte dans le risque"
    ),
    "fact.no_stop.none": "Aucun arrêt à moins de {m} m et aucune déviation dans la région d'Anvers",
    "fact.no_stop.one": (
        "Aucun arrêt à moins de {m} m\u00a0: la seule déviation de la région d'Anvers est "
        "affichée, sans être prise en compte dans le risque"
    ),
    "fact.no_stop.many": (
        "Aucun arrêt à moins de {m} m\u00a0: les {n} déviations de la région d'Anvers sont "
        "affichées, sans être prises en compte dans le risque"
    ),
    "fact.nearest": "Chantier en cours le plus proche à {m} m",
    "fact.nearest.none": "Aucun chantier en cours dans un rayon de {radius}",
    "fact.upcoming.none": "Aucun chantier prévu ne commence dans les 14 jours",
    "fact.upcoming.one": "{n} chantier prévu commence dans les 14 jours",
    "fact.upcoming.many": "{n} chantiers prévus commencent dans les 14 jours",
    "fact.high.none": "Aucune déviation à fort impact",
    "fact.high.one": "{n} déviation à fort impact",
    "fact.high.many": "{n} déviations à fort impact",
    "fact.no2": "NO2 {value} µg/m³ mesuré à {station} ({id})",
    "fact.no2.none": "Aucune mesure de NO2 au cours des deux dernières heures",
    "fact.lez.inside": "Dans la zone de basses émissions d'Anvers",
    "fact.lez.outside": "En dehors de la zone de basses émissions d'Anvers",
    # /air-quality
    "thresholds.note": (
        "Normes NO2 en moyenne annuelle\u00a0; la comparaison avec une valeur horaire est indicative."
    ),
    "threshold.who": "Valeur guide de l'OMS (moyenne annuelle)",
    "threshold.eu": "Valeur limite de l'UE (moyenne annuelle)",
    "compliance.unknown": "Inconnu\u00a0: aucune mesure au cours des deux dernières heures",
    "compliance.below_who": "Sous la valeur guide de l'OMS",
    "compliance.above_who": "Au-dessus de la valeur guide de l'OMS, sous la valeur limite de l'UE",
    "compliance.above_eu": "Au-dessus de la valeur limite de l'UE",
}
