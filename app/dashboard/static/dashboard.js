/* Dashboard map: Leaflet (served by us, from npm) over our own vector base layers (borders, LEZ, river, with
   municipality and river names) and a metric scale; raster tiles only when MAP_TILE_URL is set.
   Mode "pick": a click (or Enter on the focused map = its centre) fills the lat/lng fields.
   Mode "view": draws the point's works, station and detour stops (given in the page as JSON, so a point
   shown is one counted call). Clicking, tapping or pressing Enter on a feature, or on its table row, shows
   its details in the page (popup + details panel) and highlights the row and the dot; Escape closes them.
   Clicking elsewhere on the map offers the figures of that point (a link): nothing navigates by itself.
   Labels come from the page (#map-labels, in the page's language); upstream texts are never HTML. */
(function () {
  "use strict";
  var el = document.getElementById("map");
  if (!el || !window.L) { return; }
  var labelsEl = document.getElementById("map-labels");
  var T = labelsEl ? JSON.parse(labelsEl.textContent) : {};
  function t(id, fields) {
    var s = T[id] || id;
    Object.keys(fields || {}).forEach(function (k) { s = s.split("{" + k + "}").join(fields[k]); });
    return s;
  }
  var lang = el.dataset.lang || document.documentElement.lang || "en";
  var ANTWERP = [51.2194, 4.4025];
  var map = L.map(el, { center: ANTWERP, zoom: 12, keyboard: true });
  el.urbanMap = map;  // for geojson-open.js (opens a saved GeoJSON answer over this map)
  if (el.dataset.tiles) {
    L.tileLayer(el.dataset.tiles, { attribution: el.dataset.attribution || "", maxZoom: 19 }).addTo(map);
  }
  L.control.scale({ metric: true, imperial: false, maxWidth: 150 }).addTo(map);
  var STYLE = {
    boundary: { color: "#0b5394", weight: 2.5, fill: false },
    municipality: { color: "#8a8a8a", weight: 1, dashArray: "5 3", fill: false },
    lez: { color: "#b35c00", weight: 2, fillColor: "#f0a500", fillOpacity: 0.15 },
    river: { color: "#2d7fc1", weight: 0.5, dashArray: "2 4", fillColor: "#9cc9ee", fillOpacity: 0.06 }
  };
  function baseStyle(f) {
    if (f.properties.layer === "river" && f.properties.part === "centerline") { return { color: "#2d7fc1", weight: 4 }; }
    return STYLE[f.properties.layer] || {};
  }
  function getJSON(url) {
    return fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } }).then(function (r) {
      return r.json().then(function (body) { if (!r.ok) { throw new Error(body.message || r.status); } return body; });
    });
  }
  function setStatus(text) {
    var p = document.getElementById("map-status");
    if (!p) { p = document.createElement("p"); p.id = "map-status"; p.setAttribute("role", "status"); p.className = "hint"; el.insertAdjacentElement("afterend", p); }
    p.textContent = text;
  }

  // names on the base map: every municipality from zoom 11, the large ones (50 000+) from zoom 9, the river always
  var names = L.layerGroup().addTo(map), nameMarkers = [];
  function nameMarker(at, text, cls, minZoom, minPopulation, population) {
    var icon = L.divIcon({ className: "map-name " + cls, html: "<span></span>", iconSize: [0, 0] });
    var m = L.marker([at[1], at[0]], { icon: icon, interactive: false, keyboard: false });
    m.minZoom = minZoom; m.big = population >= minPopulation;
    m.on("add", function () { m.getElement().firstChild.textContent = text; });
    nameMarkers.push(m);
  }
  function showNames() {
    var z = map.getZoom();
    nameMarkers.forEach(function (m) {
      var on = z >= m.minZoom || (m.big && z >= 9);
      if (on && !names.hasLayer(m)) { names.addLayer(m); } else if (!on && names.hasLayer(m)) { names.removeLayer(m); }
    });
  }
  map.on("zoomend", showNames);
  var pending = [getJSON(el.dataset.basemap).then(function (fc) {
    L.geoJSON(fc, { style: baseStyle, interactive: false }).addTo(map);
    fc.features.forEach(function (f) {
      var q = f.properties;
      if (q.layer === "municipality" && q.labelAt) { nameMarker(q.labelAt, q.name, "municipality", 11, 50000, q.population || 0); }
      if (q.layer === "river" && q.labelAt) { nameMarker(q.labelAt, q.name || t("legend.river"), "river", 0, 0, 0); }
    });
    showNames();
  })];

  var latInput = document.getElementById("lat"), lngInput = document.getElementById("lng");
  var pointMarker = null;
  function pointIcon() { return L.divIcon({ className: "mk point", iconSize: [22, 22] }); }
  function put(lat, lng) {
    if (pointMarker) { pointMarker.setLatLng([lat, lng]); }
    else { pointMarker = L.marker([lat, lng], { icon: pointIcon(), keyboard: false, interactive: false, zIndexOffset: 1000 }).addTo(map); }
  }
  var hereLink = document.createElement("a");
  function offerPoint(latlng) {
    var lat = latlng.lat.toFixed(6), lng = latlng.lng.toFixed(6);
    if (el.dataset.mode === "pick") {
      latInput.value = lat; lngInput.value = lng; put(latlng.lat, latlng.lng);
      setStatus(t("picked", { lat: lat, lng: lng }));
      return;
    }
    hereLink.href = window.location.pathname + "?lat=" + lat + "&lng=" + lng;
    hereLink.textContent = t("map.show_here") + " (" + lat + ", " + lng + ")";
    hereLink.setAttribute("data-testid", "show-here");
    L.popup().setLatLng(latlng).setContent(hereLink).openOn(map);
  }
  map.on("click", function (e) { offerPoint(e.latlng); });
  el.addEventListener("keydown", function (e) { if (e.key === "Enter" && e.target === el) { offerPoint(map.getCenter()); } });
  if (el.dataset.mode === "pick" && latInput.value && lngInput.value && !isNaN(+latInput.value) && !isNaN(+lngInput.value)) {
    put(+latInput.value, +lngInput.value); map.setView([+latInput.value, +lngInput.value], 14);
  }

  // -- features of the point, their details, and the links between dots and table rows -------------------
  var markers = {}, details = document.getElementById("details"), detailsBody = document.getElementById("details-body");
  var closeButton = document.getElementById("details-close"), selected = null, returnFocus = null;
  var dateFormat = window.Intl ? new Intl.DateTimeFormat(lang === "en" ? "en-GB" : lang, { day: "numeric", month: "short", year: "numeric", timeZone: "UTC" }) : null;
  var numberFormat = window.Intl ? new Intl.NumberFormat(lang === "en" ? "en-GB" : lang + "-BE", { maximumFractionDigits: 3 }) : null;
  function num(x) { return numberFormat ? numberFormat.format(x) : String(x); }
  function day(iso) { return iso && dateFormat ? dateFormat.format(new Date(iso + "T00:00:00Z")) : (iso || ""); }
  function keyOf(q) { return q.kind === "stop" ? "detour:" + q.detour : q.kind + ":" + q.id; }
  function rowsOf(key) { return document.querySelectorAll('[data-feature="' + key.replace(/"/g, "") + '"]'); }
  function hindranceText(q) {  // GIPOD's Dutch consequences as published, our labels around them
    if (!q.hindered) { return t("hindrance.none"); }
    var c = (q.consequences || []).join("; ");
    if (q.severe) { return c ? t("severe") + ": " + c : t("severe"); }
    return c || t("hindrance.validated");
  }
  function facts(q) {
    if (q.kind === "work") {
      var out = [[t("col.status"), q.status], [t("col.km"), num(q.distanceKm)], [t("col.from"), day(q.startDate)], [t("col.to"), q.endDate ? day(q.endDate) : t("open_end")]];
      out.push([t("col.hindrance"), hindranceText(q)]);
      return { title: q.description + " (" + q.id + ")", kind: t("kind.work"), rows: out };
    }
    if (q.kind === "stop") {
      return { title: q.name + " (" + q.id + ")", kind: t("kind.stop"), rows: [[t("col.detour"), q.detour], [t("col.severity"), q.severity ? t("sev." + q.severity) : ""]] };
    }
    return { title: q.name + " (" + q.id + ")", kind: t("kind.station"), rows: [["NO2", q.value === null || q.value === undefined ? "–" : num(q.value) + " µg/m³"]] };
  }
  function describe(q) {  // text only: upstream values never become HTML
    var f = facts(q), box = document.createElement("div"), h = document.createElement("h3"), p = document.createElement("p"), dl = document.createElement("dl");
    p.className = "hint"; p.textContent = f.kind; h.textContent = f.title;
    f.rows.forEach(function (r) { var dt = document.createElement("dt"), dd = document.createElement("dd"); dt.textContent = r[0]; dd.textContent = r[1]; dl.appendChild(dt); dl.appendChild(dd); });
    box.appendChild(p); box.appendChild(h); box.appendChild(dl);
    return box;
  }
  function highlight(key, on) {
    (markers[key] || []).forEach(function (m) { var e = m.getElement(); if (e) { e.classList.toggle("selected", on); } });
    Array.prototype.forEach.call(rowsOf(key), function (r) { r.classList.toggle("selected", on); if (on) { r.setAttribute("aria-current", "true"); } else { r.removeAttribute("aria-current"); } });
  }
  function select(key, marker, fromRow) {
    if (selected) { highlight(selected, false); }
    selected = key;
    var m = marker || (markers[key] || [])[0];
    highlight(key, true);
    if (details && m) {
      detailsBody.textContent = ""; detailsBody.appendChild(describe(m.feature.properties));
      closeButton.hidden = false; details.classList.add("open"); details.dataset.feature = key;
    }
    if (m) {
      if (fromRow) {
        var r = el.getBoundingClientRect();
        if (r.top < 0 || r.bottom > window.innerHeight) { el.scrollIntoView({ block: "center" }); }
        map.panTo(m.getLatLng());
      }
      m.openPopup();
    }
  }
  function unselect() {
    if (!selected) { return; }
    highlight(selected, false); selected = null; map.closePopup();
    if (details) { detailsBody.textContent = ""; closeButton.hidden = true; details.classList.remove("open"); delete details.dataset.feature; }
    if (returnFocus && document.contains(returnFocus)) { returnFocus.focus(); }
    returnFocus = null;
  }
  if (closeButton) { closeButton.addEventListener("click", unselect); }
  document.addEventListener("keydown", function (e) { if (e.key === "Escape") { unselect(); } });
  Array.prototype.forEach.call(document.querySelectorAll("[data-feature], [data-show]"), function (row) {
    var key = row.getAttribute("data-feature") || row.getAttribute("data-show");
    function go(e) { if (e.target.closest && e.target.closest("a, form")) { return; } returnFocus = row; select(key, null, true); }
    row.addEventListener("click", go);
    if (row.tagName !== "BUTTON") { row.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); go(e); } }); }
  });
  function icon(q) {
    var cls = q.kind === "work" ? "work " + (q.running ? "running" : "planned") + (q.severe ? " severe" : "")
      : q.kind === "stop" ? "stop " + (q.severity || "low") : "station";
    var size = q.kind === "station" ? 18 : q.kind === "stop" ? ({ high: 14, medium: 11, low: 9 }[q.severity] || 9) : 16;
    return L.divIcon({ className: "mk " + cls, iconSize: [size, size] });
  }
  var drawn = document.getElementById("map-point");  // the page's own data (JSON, never executed)
  if (drawn) {
    pending.push(Promise.resolve(JSON.parse(drawn.textContent)).then(function (body) {
      var p = body.point, layer = L.featureGroup().addTo(map);
      L.circle([p.lat, p.lng], { radius: body.radiusKm * 1000, color: "#1a1a1a", weight: 1.5, dashArray: "6 5", fill: false, interactive: false }).addTo(layer);
      body.features.features.forEach(function (f) {
        var c = f.geometry.coordinates, q = f.properties, at = [c[1], c[0]];
        if (q.kind === "point") { put(at[0], at[1]); layer.addLayer(L.circleMarker(at, { radius: 1, opacity: 0, fillOpacity: 0, interactive: false })); return; }
        var f0 = facts(q), key = keyOf(q);
        var m = L.marker(at, { icon: icon(q), keyboard: true, title: f0.kind + ": " + f0.title, alt: f0.kind + ": " + f0.title, riseOnHover: true });
        m.feature = f; m.featureKey = key;
        function open() { returnFocus = m.getElement(); select(key, m, false); }
        m.on("add", function () {
          var e = m.getElement();
          e.setAttribute("data-feature", key);
          e.addEventListener("keydown", function (ev) { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); ev.stopPropagation(); open(); } });
        });
        m.bindPopup(function () { return describe(q); }, { autoPan: true });
        m.on("click", function (e) { L.DomEvent.stopPropagation(e); open(); });
        (markers[key] = markers[key] || []).push(m);
        m.addTo(layer);
      });
      map.fitBounds(layer.getBounds().pad(0.05));
      el.dataset.features = String(body.features.features.length);
    }));
  }
  Promise.all(pending).then(function () { el.dataset.ready = "1"; },
    function (err) { el.dataset.ready = "error"; setStatus(t("map.loading_failed", { error: err.message })); });
}());
