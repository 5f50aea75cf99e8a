"""The dashboard's language and its labels: one catalogue of our own texts in nl, fr and en, and times for people.

The language of a dashboard answer (:func:`choose`): the user's explicit choice (the switcher sets the cookie
:data:`COOKIE`), else the browser's ``Accept-Language`` negotiated exactly as the API does
(:func:`app.api.negotiation.choose_language`: ``nl`` when nothing fits). The texts ``geo`` generates (headline,
key facts, NO2 labels) come in the same language from ``geo``'s own catalogues; upstream data values (work
descriptions, statuses, stop names) are never translated.

:data:`LABELS` holds every label of the pages, the PDF and the map script: message id → ``(nl, fr, en)``
(the order of :data:`geo.rules.texts.LANGUAGES`), ``str.format`` fields identical in the three (a test checks).

Times for people are local Europe/Brussels time with the zone's name (:func:`local_time`:
``Mon 16 Nov 08:00 CET``); pages put the ISO instant beside it for machines (``<time datetime>``).
"""

from __future__ import annotations

from datetime import datetime

from geo.rules.texts import DEFAULT, LANGUAGES
from geo.rules.timefmt import BRUSSELS

COOKIE = "urban_lang"
NAMES = {"nl": "Nederlands", "fr": "Français", "en": "English"}

_DAYS = {
    "nl": ("ma", "di", "wo", "do", "vr", "za", "zo"),
    "fr": ("lun.", "mar.", "mer.", "jeu.", "ven.", "sam.", "dim."),
    "en": ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"),
}
_MONTHS = {
    "nl": ("jan", "feb", "mrt", "apr", "mei", "jun", "jul", "aug", "sep", "okt", "nov", "dec"),
    "fr": (
        "janv.",
        "févr.",
        "mars",
        "avr.",
        "mai",
        "juin",
        "juil.",
        "août",
        "sept.",
        "oct.",
        "nov.",
        "déc.",
    ),
    "en": ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"),
}

#: message id → (nl, fr, en)
LABELS: dict[str, tuple[str, str, str]] = {
    # frame
    "brand": (
        "Urban Conditions · Dashboard",
        "Urban Conditions · Tableau de bord",
        "Urban Conditions · Dashboard",
    ),
    "dashboard": ("Dashboard", "Tableau de bord", "Dashboard"),
    "nav.locations": ("Locaties", "Lieux", "Locations"),
    "nav.map": ("Kaart", "Carte", "Map"),
    "nav.deliveries": ("Leveringen", "Envois", "Deliveries"),
    "nav.api": ("API-gedeelte", "Espace API", "API section"),
    "nav.language": ("Taal", "Langue", "Language"),
    "skip": ("Naar de inhoud", "Aller au contenu", "Skip to content"),
    "sign_in": ("Aanmelden", "Se connecter", "Sign in"),
    "sign_out": ("Afmelden", "Se déconnecter", "Sign out"),
    "footer": (
        "Wegenwerken (GIPOD), omleidingen van De Lijn, gemeten NO2 (IRCEL-CELINE) en de Antwerpse LEZ voor "
        "Vlaanderen en Brussel. De cijfers zijn die van de API.",
        "Chantiers (GIPOD), déviations De Lijn, NO2 mesuré (IRCEL-CELINE) et la LEZ d'Anvers pour la Flandre "
        "et Bruxelles. Les chiffres sont ceux de l'API.",
        "Road works (GIPOD), De Lijn detours, measured NO2 (IRCEL-CELINE) and the Antwerp LEZ for Flanders "
        "and Brussels. The figures are the API's own.",
    ),
    "demo": (
        "Demogegevens: de klok van de gegevens staat op {when}{ago}. Alle cijfers gelden voor dat moment, "
        "niet voor nu.",
        "Données de démonstration : l'horloge des données est arrêtée au {when}{ago}. Tous les chiffres "
        "valent pour cet instant, pas pour maintenant.",
        "Demo data: the data clock stands at {when}{ago}. Every figure is for that moment, not for now.",
    ),
    "demo.ago": (" ({days} dagen geleden)", " (il y a {days} jours)", " ({days} days ago)"),
    # saved locations
    "loc.title": ("Bewaarde locaties", "Lieux enregistrés", "Saved locations"),
    "loc.signed_in": (
        "Aangemeld als {email} · abonnement",
        "Connecté en tant que {email} · formule",
        "Signed in as {email} · plan",
    ),
    "loc.explorer": (
        "Uw abonnement heeft de kaartverkenner (alleen lezen): open de kaart en klik op een punt om de cijfers "
        "te zien. Locaties bewaren, meldingen en PDF-rapporten horen bij Pro en Enterprise.",
        "Votre formule donne l'explorateur de carte (lecture seule) : ouvrez la carte et cliquez sur un point "
        "pour en voir les chiffres. Enregistrer des lieux, les alertes et les rapports PDF font partie des "
        "formules Pro et Enterprise.",
        "Your plan has the read-only map explorer: open the map and click any point to see its figures. Saving "
        "locations, alerts and PDF reports come with the Pro and Enterprise plans.",
    ),
    "loc.add": ("Locatie toevoegen", "Ajouter un lieu", "Add a location"),
    "loc.add_hint": (
        "Klik op de kaart om het punt te kiezen, of typ de coördinaten (WGS84-graden).",
        "Cliquez sur la carte pour choisir le point, ou tapez ses coordonnées (degrés WGS84).",
        "Click the map to pick the point, or type its coordinates (WGS84 degrees).",
    ),
    "loc.map_pick": (
        "Kaart: klik om het punt van de nieuwe locatie te kiezen",
        "Carte : cliquez pour choisir le point du nouveau lieu",
        "Map: click to pick the point of the new location",
    ),
    "field.name": ("Naam", "Nom", "Name"),
    "field.address": ("Adres", "Adresse", "Address"),
    "field.label": ("Label", "Étiquette", "Label"),
    "field.optional": ("(optioneel)", "(facultatif)", "(optional)"),
    "field.lat": ("Breedtegraad", "Latitude", "Latitude"),
    "field.lng": ("Lengtegraad", "Longitude", "Longitude"),
    "field.primary": ("Hoofdlocatie", "Lieu principal", "Primary location"),
    "loc.save": ("Locatie bewaren", "Enregistrer le lieu", "Save location"),
    "loc.yours": ("Uw locaties", "Vos lieux", "Your locations"),
    "loc.same_records": (
        "Dezelfde records als GET /api/v1/locations; gebruik de id als locationId.",
        "Les mêmes enregistrements que GET /api/v1/locations ; utilisez l'id comme locationId.",
        "The same records as GET /api/v1/locations; use the id as locationId.",
    ),
    "loc.primary": ("hoofdlocatie", "principal", "primary"),
    "loc.map_link": ("Kaart en cijfers", "Carte et chiffres", "Map and figures"),
    "loc.report": ("PDF-rapport", "Rapport PDF", "PDF report"),
    "loc.edit": ("Wijzigen of verwijderen", "Modifier ou supprimer", "Edit or delete"),
    "loc.save_changes": ("Wijzigingen bewaren", "Enregistrer les modifications", "Save changes"),
    "loc.delete": ("Verwijderen", "Supprimer", "Delete"),
    "loc.delete_named": ("{name} verwijderen", "Supprimer {name}", "Delete {name}"),
    "loc.none": ("Nog geen bewaarde locaties.", "Pas encore de lieu enregistré.", "No saved locations yet."),
    "flash.saved": (
        "“{name}” bewaard (id {id}).",
        "« {name} » enregistré (id {id}).",
        "Saved “{name}” (id {id}).",
    ),
    "flash.updated": ("“{name}” bijgewerkt.", "« {name} » mis à jour.", "Updated “{name}”."),
    "flash.deleted": (
        "De locatie is verwijderd (met haar meldingen).",
        "Le lieu est supprimé (avec ses alertes).",
        "The location is deleted (with its alerts).",
    ),
    "picked": (
        "Gekozen: {lat}, {lng}. Vul een naam in en bewaar.",
        "Choisi : {lat}, {lng}. Donnez un nom et enregistrez.",
        "Picked {lat}, {lng}. Fill in a name and save.",
    ),
    # the map page
    "map.title": ("Kaart", "Carte", "Map"),
    "map.point_title": ("Punt {lat}, {lng}", "Point {lat}, {lng}", "Point {lat}, {lng}"),
    "map.choose": ("Kies een punt", "Choisir un point", "Choose a point"),
    "map.saved": ("Bewaarde locatie", "Lieu enregistré", "Saved location"),
    "map.coords_below": ("— coördinaten hieronder —", "— coordonnées ci-dessous —", "— coordinates below —"),
    "map.show": ("Tonen", "Afficher", "Show"),
    "map.hint": (
        "Klik op de kaart om een ander punt in Vlaanderen of Brussel te kiezen; klik op een werf, halte of "
        "meetstation (of op een rij van de tabellen) voor de details.",
        "Cliquez sur la carte pour choisir un autre point en Flandre ou à Bruxelles ; cliquez sur un chantier, "
        "un arrêt ou une station de mesure (ou sur une ligne des tableaux) pour les détails.",
        "Click the map to choose another point in Flanders or Brussels; click a work, stop or measuring "
        "station (or a row of the tables) for its details.",
    ),
    "map.aria": (
        "Kaart van het punt, de werken, haltes van omleidingen, het meetstation, de LEZ en het gebied",
        "Carte du point, des chantiers, des arrêts déviés, de la station de mesure, de la LEZ et de la zone",
        "Map of the point, its works, detour stops, measuring station, LEZ and service area",
    ),
    "map.show_here": (
        "Cijfers van dit punt tonen",
        "Afficher les chiffres de ce point",
        "Show the figures of this point",
    ),
    "map.close": ("Sluiten", "Fermer", "Close"),
    "map.details": ("Details", "Détails", "Details"),
    "map.details_hint": (
        "Kies een werf, halte of station op de kaart of in een tabel.",
        "Choisissez un chantier, un arrêt ou une station sur la carte ou dans un tableau.",
        "Choose a work, stop or station on the map or in a table.",
    ),
    "map.on_map": ("Op de kaart", "Sur la carte", "On the map"),
    "map.loading_failed": (
        "De kaart kon niet laden: {error}",
        "La carte n'a pas pu se charger : {error}",
        "The map could not load: {error}",
    ),
    "legend": ("Legende", "Légende", "Legend"),
    "legend.point": ("gekozen punt", "point choisi", "selected point"),
    "legend.circle": ("cirkel van 2 km", "cercle de 2 km", "2 km circle"),
    "legend.running": ("werf in uitvoering", "chantier en cours", "work running"),
    "legend.planned": ("werf gepland of vergund", "chantier prévu ou autorisé", "work planned or permitted"),
    "legend.severe": (
        "werf met ernstige hinder (dikke rand)",
        "chantier à forte gêne (bord épais)",
        "work with severe hindrance (thick ring)",
    ),
    "severe": ("ernstige hinder", "forte gêne", "severe hindrance"),
    "col.hindrance": ("Hinder", "Gêne", "Hindrance"),
    "hindrance.none": ("geen gemeld", "aucune signalée", "none reported"),
    "hindrance.validated": ("gevalideerd, zonder details", "validée, sans détail", "validated, no details"),
    "legend.stop_high": (
        "halte buiten dienst, grote hinder",
        "arrêt non desservi, forte gêne",
        "unserved stop, high severity detour",
    ),
    "legend.stop_medium": (
        "halte buiten dienst, matige hinder",
        "arrêt non desservi, gêne moyenne",
        "unserved stop, medium severity detour",
    ),
    "legend.stop_low": (
        "halte buiten dienst, lichte hinder",
        "arrêt non desservi, gêne faible",
        "unserved stop, low severity detour",
    ),
    "legend.station": ("NO2-meetstation", "station de mesure NO2", "NO2 measuring station"),
    "legend.lez": ("lage-emissiezone (LEZ)", "zone de basses émissions (LEZ)", "low-emission zone (LEZ)"),
    "legend.river": ("Schelde (rivier)", "Escaut (fleuve)", "River Scheldt"),
    "legend.boundary": (
        "grens Vlaanderen en Brussel",
        "limite Flandre et Bruxelles",
        "Flanders and Brussels border",
    ),
    "legend.municipality": (
        "gemeentegrens, met naam",
        "limite communale, avec nom",
        "municipality border, with name",
    ),
    "legend.tiles": (
        "achtergrondkaart: {attribution}",
        "fond de carte : {attribution}",
        "background map: {attribution}",
    ),
    "scale": ("schaal", "échelle", "scale"),
    "kind.work": ("Werf", "Chantier", "Road work"),
    "kind.stop": ("Halte buiten dienst", "Arrêt non desservi", "Unserved stop"),
    "kind.station": ("Meetstation", "Station de mesure", "Measuring station"),
    "kind.point": ("Gekozen punt", "Point choisi", "Selected point"),
    "geojson.heading": ("GeoJSON-antwoord", "Réponse GeoJSON", "GeoJSON answer"),
    "geojson.open": ("Een GeoJSON-antwoord openen", "Ouvrir une réponse GeoJSON", "Open a GeoJSON answer"),
    "geojson.hint": (
        "(een bestand bewaard uit de API met Accept: application/geo+json of urban … --geojson; het blijft in "
        "uw browser)",
        "(un fichier enregistré depuis l'API avec Accept: application/geo+json ou urban … --geojson ; il reste "
        "dans votre navigateur)",
        "(a file saved from the API with Accept: application/geo+json or urban … --geojson; it stays in your "
        "browser)",
    ),
    "geojson.caption": (
        "Objecten van het geopende bestand, in zijn volgorde; de waarden zijn die van het bestand.",
        "Objets du fichier ouvert, dans son ordre ; les valeurs sont celles du fichier.",
        "Features of the opened file, in its order; the values are the file's own.",
    ),
    "gj.opened": (
        "{name} geopend: {n} objecten, {drawn} getekend op de kaart.",
        "{name} ouvert : {n} objets, {drawn} dessinés sur la carte.",
        "Opened {name}: {n} features, {drawn} drawn on the map.",
    ),
    "gj.failed": (
        "{name} kon niet geopend worden: {why}. Er wordt niets getekend.",
        "{name} n'a pas pu être ouvert : {why}. Rien n'est dessiné.",
        "{name} could not be opened: {why}. Nothing is drawn.",
    ),
    "gj.unreadable": (
        "{name} kon niet gelezen worden. Er wordt niets getekend.",
        "{name} n'a pas pu être lu. Rien n'est dessiné.",
        "{name} could not be read. Nothing is drawn.",
    ),
    "gj.too_big": ("het is groter dan 20 MB", "il dépasse 20 Mo", "it is larger than 20 MB"),
    "gj.not_json": (
        "het is geen JSON ({error})",
        "ce n'est pas du JSON ({error})",
        "it is not JSON ({error})",
    ),
    "gj.not_fc": (
        'het is geen GeoJSON FeatureCollection (een object met "type": "FeatureCollection" en een '
        '"features"-lijst)',
        'ce n\'est pas une FeatureCollection GeoJSON (un objet avec "type": "FeatureCollection" et un '
        'tableau "features")',
        'it is not a GeoJSON FeatureCollection (an object with "type": "FeatureCollection" and a '
        '"features" array)',
    ),
    "gj.not_feature": (
        "object {i} is geen GeoJSON Feature",
        "l'objet {i} n'est pas une Feature GeoJSON",
        "feature {i} is not a GeoJSON Feature",
    ),
    "gj.bad_geometry": (
        "object {i} heeft geen geldige geometrie (een object met een type, of null)",
        "l'objet {i} n'a pas de géométrie valide (un objet avec un type, ou null)",
        "feature {i} has no valid geometry (an object with a type, or null)",
    ),
    "gj.show": ("Tonen", "Afficher", "Show"),
    "gj.show_on_map": ("{what} tonen op de kaart", "Afficher {what} sur la carte", "Show {what} on the map"),
    "gj.no_position": ("geen positie", "pas de position", "no position"),
    "gj.radius": ("straal {km}", "rayon {km}", "radius {km}"),
    "col.kind": ("Soort", "Type", "Kind"),
    "col.id": ("Id", "Id", "Id"),
    "col.status": ("Status", "Statut", "Status"),
    "col.km": ("km", "km", "km"),
    "col.map": ("Kaart", "Carte", "Map"),
    "as_of": ("Gegevens van {when}.", "Données du {when}.", "Data as of {when}."),
    "save_point": (
        "Dit punt als locatie bewaren",
        "Enregistrer ce point comme lieu",
        "Save this point as a location",
    ),
    "download_report": (
        "Het PDF-rapport downloaden",
        "Télécharger le rapport PDF",
        "Download the PDF report",
    ),
    "dossier_link": (
        "Bewijsdossier",
        "Dossier de preuves",
        "Evidence dossier",
    ),
    # briefing
    "briefing.heading": (
        "Briefing: de komende 24 uur",
        "Briefing : les prochaines 24 heures",
        "Briefing: the next 24 hours",
    ),
    "risk.low": ("laag", "faible", "low"),
    "risk.moderate": ("matig", "modéré", "moderate"),
    "risk.high": ("hoog", "élevé", "high"),
    "risk": ("Risico", "Risque", "Risk"),
    "best_window": (
        "Rustigste venster overdag",
        "Créneau le plus calme en journée",
        "Quietest daytime window",
    ),
    "worst_window": ("Drukste venster", "Créneau le plus chargé", "Busiest window"),
    "rush_peak": ("Volgende spitspiek", "Prochain pic de pointe", "Next rush peak"),
    "rush.ochtendspits": ("ochtendspits", "pointe du matin", "morning rush"),
    "rush.avondspits": ("avondspits", "pointe du soir", "evening rush"),
    "rush.zaterdagspits": ("zaterdagspits", "pointe du samedi", "Saturday rush"),
    "sev.low": ("licht", "faible", "low"),
    "sev.medium": ("matig", "moyenne", "medium"),
    "sev.high": ("groot", "forte", "high"),
    "score": ("drukte {score} op 1", "affluence {score} sur 1", "busyness {score} of 1"),
    "daytime_note": (
        "Drukte: 0 = rustig, 1 = spits met zware hinder (verkeersprofiel van het uur plus werken en omleidingen "
        "in de buurt). Overdag = tussen 06:00 en 20:00; de API geeft ook nachtvensters (bestWindow).",
        "Affluence : 0 = calme, 1 = heure de pointe avec forte gêne (profil de trafic de l'heure plus chantiers "
        "et déviations proches). En journée = entre 06:00 et 20:00 ; l'API donne aussi les créneaux de nuit "
        "(bestWindow).",
        "Busyness: 0 = quiet, 1 = rush hour with heavy disruption (the hour's traffic profile plus nearby works "
        "and detours). Daytime = between 06:00 and 20:00; the API also gives night windows (bestWindow).",
    ),
    # air quality
    "air": ("Luchtkwaliteit (NO2)", "Qualité de l'air (NO2)", "Air quality (NO2)"),
    "air.measured": (
        "Gemeten {when} in {station}, op {km} km. Trend: {trend}{percent}.",
        "Mesuré {when} à {station}, à {km} km. Tendance : {trend}{percent}.",
        "Measured {when} at {station}, {km} km away. Trend: {trend}{percent}.",
    ),
    "trend.rising": ("stijgend", "en hausse", "rising"),
    "trend.falling": ("dalend", "en baisse", "falling"),
    "trend.stable": ("stabiel", "stable", "stable"),
    "trend.unknown": ("onbekend", "inconnue", "unknown"),
    "air.none": (
        "Geen gemeten waarde in de laatste twee uur (onbekend, niet nul).",
        "Aucune valeur mesurée ces deux dernières heures (inconnue, pas zéro).",
        "No measured value in the last two hours (unknown, not zero).",
    ),
    "col.figure": ("Norm", "Seuil", "Figure"),
    "col.exceeded": ("Overschreden", "Dépassé", "Exceeded"),
    "yes": ("ja", "oui", "yes"),
    "no": ("nee", "non", "no"),
    "lez.inside": ("Binnen de {name} (LEZ).", "Dans la {name} (LEZ).", "Inside the {name} (LEZ)."),
    "lez.outside": (
        "Buiten de lage-emissiezone.",
        "Hors de la zone de basses émissions.",
        "Outside the low-emission zone.",
    ),
    # works and detours
    "works.heading": (
        "Wegenwerken binnen {km} km",
        "Chantiers dans un rayon de {km} km",
        "Road works within {km} km",
    ),
    "works.summary": (
        "{running} in uitvoering, {planned} gepland, {soon} starten binnen 14 dagen.",
        "{running} en cours, {planned} prévus, {soon} commencent dans les 14 jours.",
        "{running} running, {planned} planned, {soon} starting within 14 days.",
    ),
    "col.work": ("Werf", "Chantier", "Work"),
    "col.from": ("Van", "Du", "From"),
    "col.to": ("Tot", "Au", "To"),
    "detours.heading": ("Omleidingen van De Lijn", "Déviations De Lijn", "De Lijn detours"),
    "detours.summary": (
        "{n} omleidingen, {high} met grote hinder.",
        "{n} déviations, {high} avec forte gêne.",
        "{n} detours, {high} with high severity.",
    ),
    "col.detour": ("Omleiding", "Déviation", "Detour"),
    "col.lines": ("Lijnen", "Lignes", "Lines"),
    "col.severity": ("Hinder", "Gêne", "Severity"),
    "col.delay": ("Vertraging", "Retard", "Delay"),
    "col.until": ("Tot", "Jusqu'au", "Until"),
    "open_end": ("open", "indéterminé", "open"),
    "minutes": ("{n} min", "{n} min", "{n} min"),
    "mode.tram": ("tram", "tram", "tram"),
    "mode.bus": ("bus", "bus", "bus"),
    # sources
    "sources": ("Bronnen", "Sources", "Sources"),
    "sources.caption": (
        "Van wie elk cijfer komt, onder welke licentie, en hoe vers (lokale tijd).",
        "D'où vient chaque chiffre, sous quelle licence, et sa fraîcheur (heure locale).",
        "Whose data each figure is, under which licence, and how fresh (local time).",
    ),
    "col.source": ("Bron", "Source", "Source"),
    "col.licence": ("Licentie", "Licence", "Licence"),
    "col.observed": ("Laatst waargenomen waarde", "Dernière valeur observée", "Latest value observed"),
    "col.retrieved": ("Opgehaald", "Récupéré", "Retrieved"),
    "col.next": ("Volgende update", "Prochaine mise à jour", "Next update"),
    "col.fresh": ("Versheid", "Fraîcheur", "Freshness"),
    "kind.data": ("{kind}-gegevens", "données {kind}", "{kind} data"),
    "data.live": ("live", "en direct", "live"),
    "data.demo": ("demo", "de démonstration", "demo"),
    "data.recorded": ("opgenomen", "enregistrées", "recorded"),
    "data.reference": ("referentie", "de référence", "reference"),
    "data.unknown": ("onbekend", "inconnues", "unknown"),
    "no_value": ("geen waarde", "aucune valeur", "no value"),
    "not_refreshed": ("niet ververst", "pas rafraîchi", "not refreshed"),
    "stale": ("verouderd", "périmé", "stale"),
    "current": ("actueel", "à jour", "current"),
    # alerts
    "alerts": ("Meldingen", "Alertes", "Alerts"),
    "alerts.paused": (
        "Uw abonnement ({plan}) heeft geen meldingen, dus deze sturen niets. U kunt ze verwijderen; ze starten "
        "opnieuw met Pro of Enterprise.",
        "Votre formule ({plan}) n'a pas d'alertes : celles-ci n'envoient rien. Vous pouvez les supprimer ; "
        "elles reprennent avec Pro ou Enterprise.",
        "Your plan ({plan}) has no alerts, so these send nothing. You can remove them; they start again on "
        "the Pro or Enterprise plan.",
    ),
    "secret.title": ("Webhookgeheim", "Secret de webhook", "Webhook secret"),
    "secret.new": ("Nieuw webhookgeheim", "Nouveau secret de webhook", "New webhook secret"),
    "back_to": ("Terug naar {name}", "Retour à {name}", "Back to {name}"),
    "back": ("Terug naar het dashboard", "Retour au tableau de bord", "Back to the dashboard"),
    # unsubscribe
    "unsub.title": ("Uitschrijven", "Se désabonner", "Unsubscribe"),
    "unsub.done": (
        "U bent uitgeschreven: deze melding stuurt niets meer.",
        "Vous êtes désabonné : cette alerte n'envoie plus rien.",
        "You are unsubscribed: this alert sends nothing more.",
    ),
    "unsub.gone": (
        "Deze melding bestaat niet meer: er wordt niets meer gestuurd.",
        "Cette alerte n'existe plus : plus rien n'est envoyé.",
        "This alert is already gone: nothing more is sent.",
    ),
    "unsub.ask_changes": (
        "De e-mails over wijzigingen voor {name} stoppen?",
        "Arrêter les e-mails de changements pour {name} ?",
        "Stop the change alert e-mails for {name}?",
    ),
    "unsub.invalid": (
        "Deze uitschrijflink is niet (meer) geldig: de melding bestaat al niet meer.",
        "Ce lien de désabonnement n'est pas (ou plus) valable : l'alerte n'existe déjà plus.",
        "This unsubscribe link is not (or no longer) valid: the alert is already gone.",
    ),
    # problems
    "problem.expired": ("Formulier verlopen", "Formulaire expiré", "Form expired"),
    "problem.expired_text": (
        "Dit formulier is niet meer geldig (of cookies zijn geblokkeerd). Laad de pagina opnieuw en probeer "
        "het nog eens.",
        "Ce formulaire n'est plus valable (ou les cookies sont bloqués). Rechargez la page et réessayez.",
        "This form is no longer valid (or cookies are blocked). Reload the page and try again.",
    ),
    "problem.unavailable": (
        "Tijdelijk niet beschikbaar",
        "Temporairement indisponible",
        "Temporarily unavailable",
    ),
    "problem.limit": ("Limiet bereikt", "Limite atteinte", "Limit reached"),
    "problem.not_possible": ("Niet mogelijk", "Impossible", "Not possible"),
    "problem.plan": ("Pro-abonnement nodig", "Formule Pro requise", "Pro plan needed"),
    "problem.plan_text": (
        "Uw abonnement ({plan}) heeft de kaartverkenner (alleen lezen). Locaties bewaren, meldingen en "
        "PDF-rapporten horen bij Pro en Enterprise.",
        "Votre formule ({plan}) donne l'explorateur de carte (lecture seule). Enregistrer des lieux, les "
        "alertes et les rapports PDF font partie des formules Pro et Enterprise.",
        "Your plan ({plan}) has the read-only map explorer. Saving locations, alerts and PDF reports are part "
        "of the Pro and Enterprise plans.",
    ),
    "problem.unsub_body": (
        "Een uitschrijfverzoek bevat List-Unsubscribe=One-Click. Open de link uit de e-mail.",
        "Une demande de désabonnement contient List-Unsubscribe=One-Click. Ouvrez le lien de l'e-mail.",
        "An unsubscribe request carries List-Unsubscribe=One-Click. Open the link from the mail.",
    ),
    "problem.detail": ("Technisch detail (API)", "Détail technique (API)", "Technical detail (API)"),
    "limit.quota": (
        "De {quota} oproepen van uw abonnement {plan} voor vandaag zijn gebruikt (de cijfers van een punt op de "
        "kaart tellen als één API-oproep); ze komen terug om {reset}, over {wait}.",
        "Les {quota} appels de votre formule {plan} pour aujourd'hui sont utilisés (les chiffres d'un point sur "
        "la carte comptent pour un appel API) ; ils reviennent à {reset}, dans {wait}.",
        "the {quota} calls of your {plan} plan for today are used (the figures of a point on the map count as "
        "one API call); they come back at {reset}, in {wait}.",
    ),
    "limit.reports": (
        "Er werden {limit} rapporten gemaakt voor uw account in dit venster (REPORT_LIMIT {setting}); het "
        "volgende kan gemaakt worden over {wait}. Rapporten die al gemaakt zijn voor de huidige gegevens komen "
        "meteen.",
        "{limit} rapports ont été produits pour votre compte dans cette fenêtre (REPORT_LIMIT {setting}) ; le "
        "suivant peut être produit dans {wait}. Les rapports déjà produits pour les données actuelles arrivent "
        "tout de suite.",
        "{limit} reports were built for your account in this window (REPORT_LIMIT {setting}); the next can be "
        "built in {wait}. Reports already built for the current data come at once.",
    ),
    "error.missing_target": (
        "Kies een bewaarde locatie of geef beide coördinaten.",
        "Choisissez un lieu enregistré ou donnez les deux coordonnées.",
        "Choose a saved location or give both coordinates.",
    ),
    "error.invalid_coordinates": (
        "De coördinaten zijn geen geldige getallen in graden (bv. 51.2194 en 4.4025, met een punt).",
        "Les coordonnées ne sont pas des nombres valides en degrés (p. ex. 51.2194 et 4.4025, avec un point).",
        "The coordinates are not valid numbers in degrees (e.g. 51.2194 and 4.4025, with a decimal point).",
    ),
    "error.outside_service_area": (
        "Dit punt ligt buiten Vlaanderen en Brussel.",
        "Ce point se trouve hors de la Flandre et de Bruxelles.",
        "This point lies outside Flanders and Brussels.",
    ),
    "error.location_not_found": (
        "Deze locatie bestaat niet in uw account.",
        "Ce lieu n'existe pas dans votre compte.",
        "This location does not exist in your account.",
    ),
    # report
    "report.title": ("Rapport · {name}", "Rapport · {name}", "Report · {name}"),
    "report.page": ("pagina {page} van {pages}", "page {page} sur {pages}", "page {page} of {pages}"),
    "report.no2": ("NO2 {value} {unit}", "NO2 {value} {unit}", "NO2 {value} {unit}"),
    "report.no2_at": (
        "in {station}, {km} km; gemeten {when}; trend {trend}{percent}.",
        "à {station}, {km} km ; mesuré {when} ; tendance {trend}{percent}.",
        "at {station}, {km} km; measured {when}; trend {trend}{percent}.",
    ),
    "report.no_no2": (
        "Geen gemeten NO2-waarde in de laatste twee uur (onbekend).",
        "Aucune valeur de NO2 mesurée ces deux dernières heures (inconnue).",
        "No measured NO2 value in the last two hours (unknown).",
    ),
    "report.threshold": (
        "{name} {value} µg/m³: {state}",
        "{name} {value} µg/m³ : {state}",
        "{name} {value} µg/m³: {state}",
    ),
    "report.exceeded": ("overschreden", "dépassé", "exceeded"),
    "report.not_exceeded": ("niet overschreden", "non dépassé", "not exceeded"),
    "report.works": (
        "Wegenwerken binnen {km} km: {running} in uitvoering, {planned} gepland",
        "Chantiers dans un rayon de {km} km : {running} en cours, {planned} prévus",
        "Road works within {km} km: {running} running, {planned} planned",
    ),
    "report.detours": (
        "Omleidingen van De Lijn: {n} ({high} met grote hinder)",
        "Déviations De Lijn : {n} ({high} avec forte gêne)",
        "De Lijn detours: {n} ({high} high)",
    ),
    "report.source": (
        "{licence} ({kind}). {observed} · opgehaald {retrieved} · {next} · {fresh}",
        "{licence} ({kind}). {observed} · récupéré {retrieved} · {next} · {fresh}",
        "{licence} ({kind}). {observed} · retrieved {retrieved} · {next} · {fresh}",
    ),
    "report.observed": (
        "Laatste waarde waargenomen {when}",
        "Dernière valeur observée {when}",
        "Latest value observed {when}",
    ),
    "report.no_observed": ("Geen waarde waargenomen", "Aucune valeur observée", "No value observed"),
    "report.next": ("volgende update {when}", "prochaine mise à jour {when}", "next update {when}"),
    "report.map_caption": (
        "Kaart: 5 × 5 km rond het punt, noorden boven.",
        "Carte : 5 × 5 km autour du point, nord en haut.",
        "Map: 5 × 5 km around the point, north up.",
    ),
    "report.service": ("Urban Conditions Service", "Urban Conditions Service", "Urban Conditions Service"),
    # change feed of a location (issue 27): _changes.html, changeviews.py, changealerts.py
    "chg.heading": ("Wat hier veranderde", "Ce qui a changé ici", "What changed here"),
    "chg.unreadable": (
        "De wijzigingsfeed kan nu niet gelezen worden; probeer het straks opnieuw.",
        "Le flux des changements ne peut pas être lu maintenant ; réessayez dans un instant.",
        "The change feed cannot be read now; try again shortly.",
    ),
    "chg.none": (
        "Geen wijziging geregistreerd sinds deze locatie bewaard werd. Wijzigingen verschijnen na elke "
        "gegevensverversing.",
        "Aucun changement enregistré depuis que ce lieu a été enregistré. Les changements apparaissent après "
        "chaque mise à jour des données.",
        "No change recorded since this location was saved. Changes appear after each data refresh.",
    ),
    "chg.caption": (
        "De nieuwste {n} gebeurtenissen van de wijzigingsfeed van deze locatie, nieuwste eerst (tijden in "
        "Brusselse tijd; waarden van de bronnen zoals gepubliceerd).",
        "Les {n} événements les plus récents du flux des changements de ce lieu, du plus récent au plus ancien "
        "(heures de Bruxelles ; valeurs des sources telles que publiées).",
        "The newest {n} events of this location's change feed, newest first (Brussels time; upstream values "
        "as published).",
    ),
    "chg.col.recorded": ("Geregistreerd", "Enregistré", "Recorded"),
    "chg.col.change": ("Wijziging", "Changement", "Change"),
    "chg.col.holds": ("Geldt vanaf", "Vaut à partir de", "Holds from"),
    "chg.col.event": ("Gebeurtenis", "Événement", "Event"),
    "chg.failed.one": ("{n} mislukte levering", "{n} envoi échoué", "{n} failed delivery"),
    "chg.failed.many": ("{n} mislukte leveringen", "{n} envois échoués", "{n} failed deliveries"),
    "chg.failed.tail": (
        "van uw wijzigingsmeldingen.",
        "de vos alertes de changement.",
        "of your change alerts.",
    ),
    "chg.work": ("werk {id}", "chantier {id}", "work {id}"),
    "chg.open": ("open", "ouvert", "open"),
    "chg.detour": ("omleiding {id}", "déviation {id}", "detour {id}"),
    "chg.lines": (" (lijnen {lines})", " (lignes {lines})", " (lines {lines})"),
    "chg.station": (
        "{label} aan meetstation {station}{reading}",
        "{label} à la station {station}{reading}",
        "{label} at station {station}{reading}",
    ),
    "ctype.work.appeared": (
        "Een wegenwerk verschijnt binnen 2 km",
        "Un chantier apparaît dans un rayon de 2 km",
        "A road work appears within 2 km",
    ),
    "ctype.work.started": ("Een wegenwerk begint", "Un chantier commence", "A road work starts running"),
    "ctype.work.rescheduled": (
        "De data van een wegenwerk veranderen",
        "Les dates d'un chantier changent",
        "A road work's dates change",
    ),
    "ctype.work.description_changed": (
        "De beschrijving van een wegenwerk verandert",
        "La description d'un chantier change",
        "A road work's description changes",
    ),
    "ctype.work.ended": ("Een wegenwerk eindigt", "Un chantier se termine", "A road work ends"),
    "ctype.work.cancelled": (
        "Een wegenwerk wordt geannuleerd",
        "Un chantier est annulé",
        "A road work is cancelled",
    ),
    "ctype.work.removed": (
        "Een wegenwerk staat niet meer in de lijst",
        "Un chantier n'est plus listé",
        "A road work is no longer listed",
    ),
    "ctype.detour.started": (
        "Een omleiding van De Lijn begint de locatie te raken",
        "Une déviation De Lijn commence à toucher le lieu",
        "A De Lijn detour starts hitting the location",
    ),
    "ctype.detour.stopped": (
        "Een omleiding van De Lijn raakt de locatie niet meer",
        "Une déviation De Lijn cesse de le toucher",
        "A De Lijn detour stops hitting it",
    ),
    "ctype.station.changed": (
        "Het dichtstbijzijnde NO2-meetstation verandert",
        "La station NO2 la plus proche change",
        "The nearest NO2 station changes",
    ),
    "ctype.no2.above_eu": (
        "NO2 komt boven de EU-grenswaarde (40 µg/m³)",
        "Le NO2 dépasse la valeur limite de l'UE (40 µg/m³)",
        "NO2 goes above the EU limit value (40 µg/m³)",
    ),
    "ctype.no2.below_eu": (
        "NO2 zakt weer onder de EU-grenswaarde",
        "Le NO2 repasse sous la valeur limite de l'UE",
        "NO2 goes back below the EU limit value",
    ),
    "ctype.no2.above_who": (
        "NO2 komt boven de WHO-richtwaarde (10 µg/m³)",
        "Le NO2 dépasse la valeur guide de l'OMS (10 µg/m³)",
        "NO2 goes above the WHO guideline (10 µg/m³)",
    ),
    "ctype.no2.below_who": (
        "NO2 zakt weer onder de WHO-richtwaarde",
        "Le NO2 repasse sous la valeur guide de l'OMS",
        "NO2 goes back below the WHO guideline",
    ),
    "ctype.source.stale": (
        "Een gegevensbron veroudert",
        "Une source de données devient périmée",
        "A data source goes stale",
    ),
    "ctype.source.recovered": (
        "Een gegevensbron herstelt zich",
        "Une source de données se rétablit",
        "A data source recovers",
    ),
    "cal.heading": ("Agendafeed", "Flux d'agenda", "Calendar feed"),
    "cal.hint": (
        "Geplande en lopende werken binnen 2 km en de omleidingen van De Lijn die deze locatie raken, als "
        "iCalendar-feed voor Outlook, Google Calendar of Apple Agenda. De URL is geheim: wie hem heeft, kan "
        "de feed lezen.",
        "Les chantiers prévus et en cours dans un rayon de 2 km et les déviations De Lijn qui touchent ce lieu, "
        "en flux iCalendar pour Outlook, Google Agenda ou Apple Calendrier. Son URL est secrète : qui la "
        "possède peut lire le flux.",
        "Planned and running works within 2 km and the De Lijn detours that hit this location, as an iCalendar "
        "feed for Outlook, Google Calendar or Apple Calendar. Its URL is secret: anyone who has it can read "
        "the feed.",
    ),
    "cal.active": (
        "Er bestaat een agenda-URL (gemaakt {when}; hij werd één keer getoond).",
        "Une URL d'agenda existe (créée {when} ; elle a été montrée une seule fois).",
        "A calendar URL exists (made {when}; it was shown once).",
    ),
    "cal.revoke": ("De agenda-URL intrekken", "Révoquer l'URL d'agenda", "Revoke the calendar URL"),
    "cal.renew": (
        "Nieuwe agenda-URL (trekt de oude in)",
        "Nouvelle URL d'agenda (révoque l'ancienne)",
        "New calendar URL (revokes the old one)",
    ),
    "cal.make": ("Een agenda-URL maken", "Créer une URL d'agenda", "Make a calendar URL"),
    "cal.revoked": (
        "Agenda-URL ingetrokken: hij antwoordt voortaan 410 Gone.",
        "URL d'agenda révoquée : elle répond désormais 410 Gone.",
        "Calendar URL revoked: it answers 410 Gone from now on.",
    ),
    "cal.nothing": (
        "Geen agenda-URL om in te trekken.",
        "Aucune URL d'agenda à révoquer.",
        "No calendar URL to revoke.",
    ),
    "cal.title": ("Agenda-URL", "URL d'agenda", "Calendar URL"),
    "cal.url_for": ("Agenda-URL voor {name}", "URL d'agenda pour {name}", "Calendar URL for {name}"),
    "cal.copy": (
        "Kopieer de URL nu: hij wordt maar één keer getoond (alleen een digest ervan wordt bewaard). Voeg hem "
        "toe aan uw agendaprogramma als geabonneerde agenda (“Via URL”). Wie hem heeft, kan de feed lezen; "
        "trek hem in op de kaartpagina.",
        "Copiez l'URL maintenant : elle n'est montrée qu'une fois (seule une empreinte en est gardée). "
        "Ajoutez-la à votre agenda comme agenda abonné (« À partir d'une URL »). Qui la possède peut lire le "
        "flux ; révoquez-la sur la page de la carte.",
        "Copy the URL now: it is shown only this once (only a digest of it is kept). Add it to your calendar "
        "program as a subscribed calendar (“From URL”). Anyone who has it can read the feed; revoke it on the "
        "map page.",
    ),
    "ca.heading": ("Wijzigingsmelding", "Alerte de changement", "Change alert"),
    "ca.sending": (
        "Verstuurt {n} soorten wijzigingen",
        "Envoie {n} types de changements",
        "Sending {n} kinds of change",
    ),
    "ca.by_email": ("per e-mail", "par e-mail", "by e-mail"),
    "ca.and": ("en", "et", "and"),
    "ca.to": ("naar", "vers", "to"),
    "ca.digest": ("(dagelijks overzicht)", "(résumé quotidien)", "(daily digest)"),
    "ca.quiet": (
        ", stil {start}:00–{end}:00 Brusselse tijd",
        ", silence {start}:00–{end}:00 heure de Bruxelles",
        ", quiet {start}:00–{end}:00 Brussels time",
    ),
    "ca.remove": (
        "De wijzigingsmelding verwijderen",
        "Supprimer l'alerte de changement",
        "Remove the change alert",
    ),
    "ca.legend": ("Stuur mij deze wijzigingen", "M'envoyer ces changements", "Send me these changes"),
    "ca.email_to": ("Per e-mail naar {email}", "Par e-mail à {email}", "By e-mail to {email}"),
    "ca.digest_label": (
        "Als één dagelijks overzicht (07:00 Brusselse tijd, of wanneer de stille uren eindigen)",
        "En un résumé quotidien (07:00 heure de Bruxelles, ou à la fin des heures de silence)",
        "As one daily digest (07:00 Brussels time, or when the quiet hours end)",
    ),
    "ca.quiet_label": (
        "Stille uren (Brusselse tijd): geen e-mail",
        "Heures de silence (heure de Bruxelles) : pas d'e-mail",
        "Quiet hours (Brussels time): no e-mail",
    ),
    "ca.from": ("van", "de", "from"),
    "ca.until": ("tot", "à", "to"),
    "ca.webhook": (
        "Stuur elke wijziging ook met POST naar deze webhook",
        "Envoyer aussi chaque changement par POST à ce webhook",
        "Also POST each change to this webhook",
    ),
    "ca.webhook_hint": (
        "(CloudEvents-JSON, ondertekend met HMAC-SHA256;",
        "(JSON CloudEvents, signé avec HMAC-SHA256 ;",
        "(CloudEvents JSON, signed with HMAC-SHA256;",
    ),
    "ca.schema": ("schema", "schéma", "schema"),
    "ca.save": (
        "De wijzigingsmelding bewaren",
        "Enregistrer l'alerte de changement",
        "Save the change alert",
    ),
    "ca.saved": ("Wijzigingsmelding bewaard.", "Alerte de changement enregistrée.", "Change alert saved."),
    "ca.saved_heading": (
        "Wijzigingsmelding bewaard",
        "Alerte de changement enregistrée",
        "Change alert saved",
    ),
    "ca.removed": (
        "Wijzigingsmelding verwijderd.",
        "Alerte de changement supprimée.",
        "Change alert removed.",
    ),
    "ca.not_changed": (
        "Wijzigingsmelding niet gewijzigd: {reason}.",
        "Alerte de changement non modifiée : {reason}.",
        "Change alert not changed: {reason}.",
    ),
    "ca.err.start": (
        "het begin van de stille uren moet een uur van 0 tot 23 zijn",
        "le début des heures de silence doit être une heure de 0 à 23",
        "quiet hours' start must be an hour from 0 to 23",
    ),
    "ca.err.end": (
        "het einde van de stille uren moet een uur van 0 tot 23 zijn",
        "la fin des heures de silence doit être une heure de 0 à 23",
        "quiet hours' end must be an hour from 0 to 23",
    ),
    "ca.err.unknown_type": (
        "onbekend soort wijziging {kind}",
        "type de changement inconnu {kind}",
        "unknown event type {kind}",
    ),
    "ca.err.no_type": (
        "kies minstens één soort wijziging",
        "choisissez au moins un type de changement",
        "choose at least one kind of change",
    ),
    "ca.err.no_channel": (
        "kies e-mail, een webhook of beide",
        "choisissez l'e-mail, un webhook ou les deux",
        "choose e-mail, a webhook or both",
    ),
    "ca.err.quiet": (
        "stille uren vragen een beginuur en een ander einduur (of geen van beide)",
        "les heures de silence demandent une heure de début et une autre heure de fin (ou aucune)",
        "quiet hours need a start and a different end hour (or neither)",
    ),
    "ca.err.no_alert": (
        "geen wijzigingsmelding {id} in dit account",
        "pas d'alerte de changement {id} dans ce compte",
        "no change alert {id} in this account",
    ),
    "csecret.copy": (
        "Kopieer het geheim nu: het wordt maar één keer getoond. Elke webhook-POST naar {url} is ermee "
        "ondertekend ({header}).",
        "Copiez le secret maintenant : il n'est montré qu'une fois. Chaque POST du webhook vers {url} est "
        "signé avec lui ({header}).",
        "Copy the secret now: it is shown only this once. Each webhook POST to {url} is signed with it "
        "({header}).",
    ),
    # failed deliveries
    "dl.title": ("Mislukte leveringen", "Envois échoués", "Failed deliveries"),
    "dl.hint": (
        "Wijzigingsmeldingen waarvan de e-mail of webhook mislukte. Een mislukte levering wordt na 1, 5, 30 en "
        "60 minuten opnieuw geprobeerd en na de 5e poging opgegeven. “Opnieuw” maakt ze meteen weer aan de "
        "beurt (met vijf nieuwe pogingen); “Laten vallen” schrapt ze: ze wordt nooit verstuurd.",
        "Les alertes de changement dont l'e-mail ou le webhook a échoué. Un envoi échoué est retenté après 1, "
        "5, 30 et 60 minutes et abandonné après la 5e tentative. « Réessayer » le remet en file tout de suite "
        "(avec cinq nouvelles tentatives) ; « Écarter » le supprime : il n'est jamais envoyé.",
        "Change alerts whose e-mail or webhook failed. A failed delivery is tried again after 1, 5, 30 and 60 "
        "minutes and given up after the 5th attempt. “Retry” makes it due again at once (with five new "
        "attempts); “Dismiss” drops it: it is never sent.",
    ),
    "dl.none": ("Geen mislukte levering.", "Aucun envoi échoué.", "No failed delivery."),
    "dl.col.location": ("Locatie", "Lieu", "Location"),
    "dl.col.channel": ("Kanaal", "Canal", "Channel"),
    "dl.col.attempts": ("Pogingen", "Tentatives", "Attempts"),
    "dl.col.error": ("Laatste fout", "Dernière erreur", "Last error"),
    "dl.col.state": ("Toestand", "État", "State"),
    "dl.col.action": ("Actie", "Action", "Action"),
    "dl.given_up": ("opgegeven {when}", "abandonné {when}", "given up {when}"),
    "dl.retrying": ("wordt opnieuw geprobeerd", "en cours de nouvel essai", "retrying"),
    "dl.retry": ("Opnieuw", "Réessayer", "Retry"),
    "dl.dismiss": ("Laten vallen", "Écarter", "Dismiss"),
    "dl.aria": (
        "{label}: {channel} van {event}",
        "{label} : {channel} de {event}",
        "{label}: {channel} of {event}",
    ),
    "dl.retried": (
        "Opnieuw geprobeerd: ze gaat mee met de volgende leveringsronde.",
        "Réessayé : il part avec la prochaine tournée d'envoi.",
        "Retried: it goes out with the next delivery round.",
    ),
    "dl.dismissed": (
        "Laten vallen: ze wordt niet verstuurd.",
        "Écarté : il n'est pas envoyé.",
        "Dismissed: it is not sent.",
    ),
    "dl.gone": (
        "Niets te doen: die mislukte levering staat niet meer in de lijst.",
        "Rien à faire : cet envoi échoué n'est plus listé.",
        "Nothing to do: that failed delivery is no longer listed.",
    ),
    # evidence dossier form
    "dos.title": ("Bewijsdossier · {name}", "Dossier de preuves · {name}", "Evidence dossier · {name}"),
    "dos.heading": ("Bewijsdossier: {name}", "Dossier de preuves : {name}", "Evidence dossier: {name}"),
    "dos.intro": (
        "Voor een periode van hele dagen (Brusselse tijd) en een straal: elk wegenwerk met zijn dagen in "
        "uitvoering en zijn geregistreerde wijzigingen, de omleidingen van De Lijn die de plek raken, de "
        "uurwaarden van NO2 en hun samenvatting, met de bronnen, licenties en ophaaltijden. Als pdf en als "
        "bundel (zip van CSV- en GeoJSON-bestanden, met een SHA-256-manifest) die een overheid of verzekeraar "
        "kan controleren. Uw abonnement ({plan}) reikt {days} dagen terug.",
        "Pour une période de jours entiers (heure de Bruxelles) et un rayon : chaque chantier avec ses jours "
        "d'exécution et ses changements enregistrés, les déviations De Lijn qui touchent le lieu, les valeurs "
        "horaires de NO2 et leur résumé, avec les sources, licences et heures de récupération. En PDF et en "
        "paquet (zip de fichiers CSV et GeoJSON, avec un manifeste SHA-256) qu'une autorité ou un assureur "
        "peut vérifier. Votre formule ({plan}) remonte {days} jours en arrière.",
        "For a period of whole days (Brussels time) and a radius: every road work with its days running and "
        "its recorded changes, the De Lijn detours that hit the place, the hourly NO2 values and their "
        "summary, with the sources, licences and retrieval times. As a PDF and as a bundle (zip of CSV and "
        "GeoJSON files, with a SHA-256 manifest) that an authority or insurer can check. Your plan ({plan}) "
        "reaches {days} days back.",
    ),
    "dos.from": ("Van", "Du", "From"),
    "dos.from_hint": ("(eerste dag)", "(premier jour)", "(first day)"),
    "dos.to": ("Tot", "Au", "To"),
    "dos.to_hint": (
        "(laatste dag, uiterlijk vandaag)",
        "(dernier jour, au plus tard aujourd'hui)",
        "(last day, at the latest today)",
    ),
    "dos.radius": ("Straal voor wegenwerken", "Rayon pour les chantiers", "Radius for road works"),
    "dos.radius_hint": ("(km, 0,05–5)", "(km, 0,05–5)", "(km, 0.05–5)"),
    "dos.pdf": ("De pdf downloaden", "Télécharger le PDF", "Download the PDF"),
    "dos.zip": ("De bundel downloaden (zip)", "Télécharger le paquet (zip)", "Download the bundle (zip)"),
    "dos.back": (
        "Terug naar de kaart van {name}",
        "Retour à la carte de {name}",
        "Back to the map of {name}",
    ),
    "dos.plan_heading": ("Pro-abonnement nodig", "Formule Pro requise", "Pro plan needed"),
    "dos.plan_text": (
        "Bewijsdossiers horen bij de abonnementen Pro en Enterprise; het uwe is {plan}.",
        "Les dossiers de preuves font partie des formules Pro et Enterprise ; la vôtre est {plan}.",
        "Evidence dossiers are part of the Pro and Enterprise plans; yours is {plan}.",
    ),
    "dos.err.invalid_window": (
        "De periode is geen geldige reeks dagen.",
        "La période n'est pas une suite de jours valable.",
        "The period is not a valid run of days.",
    ),
    "dos.err.window_out_of_range": (
        "De periode valt buiten wat uw abonnement kan tonen.",
        "La période sort de ce que votre formule peut montrer.",
        "The period lies outside what your plan can show.",
    ),
    "dos.err.window_too_long": (
        "De periode is te lang voor één dossier.",
        "La période est trop longue pour un seul dossier.",
        "The period is too long for one dossier.",
    ),
    "dos.err.invalid_request": (
        "De straal is geen getal dat het dossier kan gebruiken.",
        "Le rayon n'est pas un nombre que le dossier peut utiliser.",
        "The radius is not a number the dossier can use.",
    ),
    # the "as of" control
    "asof.aria": (
        "Antwoorden op een vroeger moment",
        "Réponses à un moment passé",
        "Answers as of a past moment",
    ),
    "asof.banner": ("Stand van {when}", "État au {when}", "As of {when}"),
    "asof.banner_rest": (
        "de antwoorden zoals de dienst ze toen gaf, uit de gegevenssnapshot van {when}.",
        "les réponses telles que le service les donnait alors, tirées de l'instantané de données du {when}.",
        "the answers as the service gave them then, from the data snapshot of {when}.",
    ),
    "asof.now": ("Terug naar nu", "Revenir à maintenant", "Back to now"),
    "asof.label": ("Antwoorden op", "Réponses au", "Answers as of"),
    "asof.hint": ("(Brusselse tijd)", "(heure de Bruxelles)", "(Brussels time)"),
    "asof.submit": ("Toon op dat moment", "Afficher à ce moment", "Show as of"),
    "asof.err.invalid_as_of": (
        "Dat is geen datum en tijd die de dienst kan lezen.",
        "Ce n'est pas une date et une heure que le service peut lire.",
        "That is not a date and time the service can read.",
    ),
    "asof.err.as_of_in_future": (
        "Dat moment moet nog komen: kies een datum en tijd in het verleden.",
        "Ce moment est encore à venir : choisissez une date et une heure passées.",
        "That moment is still to come: pick a date and time in the past.",
    ),
    "asof.err.as_of_out_of_window": (
        "De geschiedenis reikt niet zo ver terug: kies een later moment.",
        "L'historique ne remonte pas si loin : choisissez un moment plus récent.",
        "The history does not reach back that far: pick a later moment.",
    ),
    "asof.err.plan_required": (
        "Antwoorden op een vroeger moment horen bij het Enterprise-abonnement.",
        "Les réponses à un moment passé font partie de la formule Enterprise.",
        "Answers at a past moment are part of the Enterprise plan.",
    ),
    "asof.err.history_unavailable": (
        "De geschiedenis kan nu niet gelezen worden: probeer het zo meteen opnieuw.",
        "L'historique ne peut pas être lu maintenant : réessayez dans un instant.",
        "The history cannot be read right now: try again in a moment.",
    ),
    "asof.err.other": (
        "Het antwoord op dat moment kan niet gegeven worden.",
        "La réponse à ce moment ne peut pas être donnée.",
        "The answer at that moment cannot be given.",
    ),
}


def choose(cookie: str | None, accept_language: str | None) -> str:
    """The language of a dashboard answer: the remembered choice, else ``Accept-Language`` as the API reads it.

    Examples
    --------
    >>> choose("fr", "en-GB,en"), choose(None, "en-GB,en;q=0.9,nl;q=0.5"), choose("de", None)
    ('fr', 'en', 'nl')
    """
    from app.api.negotiation import choose_language

    return cookie if cookie in LANGUAGES else choose_language(accept_language)


class Labels:
    """The labels of one language: ``t(msgid, **fields)``.

    Examples
    --------
    >>> Labels("fr")("works.heading", km=2)
    'Chantiers dans un rayon de 2 km'
    """

    __slots__ = ("lang", "_index")

    def __init__(self, lang: str):
        if lang not in LANGUAGES:
            raise ValueError(f"unsupported language {lang!r}")
        self.lang, self._index = lang, LANGUAGES.index(lang)

    def __call__(self, msgid: str, **fields) -> str:
        text = LABELS[msgid][self._index]
        return text.format(**fields) if fields else text

    def get(self, msgid: str, default: str) -> str:
        """The label of ``msgid``, or ``default`` (a value with no label of ours, shown as it is)."""
        return self(msgid) if msgid in LABELS else default

    def script(self, *msgids: str) -> dict:
        """The labels the map script needs, as a JSON-ready dict."""
        return {m: LABELS[m][self._index] for m in msgids}


def _instant(value) -> datetime | None:
    if value is None or value == "":
        return None
    moment = (
        value if isinstance(value, datetime) else datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    )
    if moment.tzinfo is None:
        raise ValueError(f"a naive time cannot be shown to people: {value!r}")
    return moment.astimezone(BRUSSELS)


def local_time(value, lang: str = DEFAULT, *, day: bool = True) -> str:
    """An instant (aware datetime or ISO string) for people: Brussels local time with the zone's name.

    Examples
    --------
    >>> local_time("2026-11-16T07:00:00.000Z", "en"), local_time("2026-07-01T12:30:00Z", "nl")
    ('Mon 16 Nov 08:00 CET', 'wo 1 jul 14:30 CEST')
    >>> local_time("2026-11-16T10:00:00+01:00", "fr"), local_time("2026-11-16T10:00:00+01:00", "en", day=False)
    ('lun. 16 nov. 10:00 CET', '10:00 CET')
    """
    moment = _instant(value)
    if moment is None:
        return ""
    clock = f"{moment:%H:%M} {moment.tzname()}"
    if not day:
        return clock
    return f"{_DAYS[lang][moment.weekday()]} {moment.day} {_MONTHS[lang][moment.month - 1]} {clock}"


def local_span(start, end, lang: str = DEFAULT) -> str:
    """A window for people: ``Mon 16 Nov 10:00–12:00 CET`` (the end's day and zone only when they differ).

    Examples
    --------
    >>> local_span("2026-11-16T10:00:00+01:00", "2026-11-16T12:00:00+01:00", "en")
    'Mon 16 Nov 10:00–12:00 CET'
    >>> local_span("2026-10-25T02:00:00+02:00", "2026-10-25T03:00:00+01:00", "en")
    'Sun 25 Oct 02:00 CEST – 03:00 CET'
    >>> local_span("2026-11-16T23:00:00+01:00", "2026-11-17T01:00:00+01:00", "nl")
    'ma 16 nov 23:00 – di 17 nov 01:00 CET'
    """
    a, b = _instant(start), _instant(end)
    if a is None or b is None:
        return local_time(start or end, lang)
    if a.tzname() != b.tzname():
        return f"{local_time(a, lang)} – {local_time(b, lang, day=a.date() != b.date())}"
    if a.date() != b.date():
        return f"{local_time(a, lang)[: -len(a.tzname() or '') - 1]} – {local_time(b, lang)}"
    return f"{local_time(a, lang)[: -len(a.tzname() or '') - 6]}{a:%H:%M}–{b:%H:%M} {b.tzname()}"


def local_date(value, lang: str = DEFAULT) -> str:
    """A calendar date as published (``YYYY-MM-DD``, no time) for people: ``16 Nov 2026``.

    Examples
    --------
    >>> local_date("2026-11-16", "fr"), local_date("", "en")
    ('16 nov. 2026', '')
    """
    if not value:
        return ""
    day = datetime.fromisoformat(str(value)[:10])
    return f"{day.day} {_MONTHS[lang][day.month - 1]} {day.year}"


def decimal(x, lang: str = DEFAULT, digits: int = 2) -> str:
    """A number with the language's decimal separator (``0,19`` in nl and fr).

    Examples
    --------
    >>> decimal(0.19, "nl"), decimal(0.625, "en", 3)
    ('0,19', '0.625')
    """
    from geo.rules.texts import catalogue

    return catalogue(lang).decimal(float(x), digits)


def hindrance_text(hindrance, lang: str = DEFAULT) -> str:
    """A work's validated hindrance for people: GIPOD's Dutch consequences as published (``; ``-joined), after
    our "severe" label when GIPOD flags it; our labels when it lists none or the work has no hindrance.

    Examples
    --------
    >>> hindrance_text({"severe": True, "consequences": ["Versmalde rijstroken"]}, "fr")
    'forte gêne: Versmalde rijstroken'
    >>> hindrance_text(None, "en"), hindrance_text({"severe": False, "consequences": []}, "nl")
    ('none reported', 'gevalideerd, zonder details')
    """
    t = Labels(lang)
    if not isinstance(hindrance, dict):
        return t("hindrance.none")
    consequences = "; ".join(str(c) for c in hindrance.get("consequences") or [])
    if hindrance.get("severe"):
        return f"{t('severe')}: {consequences}" if consequences else t("severe")
    return consequences or t("hindrance.validated")


def template_context(lang: str) -> dict:
    """What the templates (pages and PDF) use to speak ``lang``: ``t``, ``when``, ``span``, ``on_date``, ``dec``,
    ``hindrance``."""
    return {
        "lang": lang,
        "t": Labels(lang),
        "languages": [(code, NAMES[code]) for code in LANGUAGES],
        "when": lambda value, day=True: local_time(value, lang, day=day),
        "span": lambda start, end: local_span(start, end, lang),
        "on_date": lambda value: local_date(value, lang),
        "dec": lambda x, digits=2: decimal(x, lang, digits),
        "hindrance": lambda value: hindrance_text(value, lang),
    }
