/* "Open a GeoJSON answer": reads a file the user saved from the API (Accept: application/geo+json, or
   `urban … --geojson`) in the browser (FileReader, no upload), draws it over the map with L.geoJSON, styled by
   properties.kind as app/api/geojson.py sets it, fits the map to it and lists every feature in a table.
   Texts from the file are only ever set as textContent, never parsed as HTML. */
(function () {
  "use strict";
  var el = document.getElementById("map"), input = document.getElementById("geojson-file");
  if (!el || !input || !window.L || !el.urbanMap) { return; }
  var map = el.urbanMap, overlay = null;
  var status = document.getElementById("geojson-status"), table = document.getElementById("geojson-table");
  var tbody = table.querySelector("tbody");
  var MAX_BYTES = 20 * 1024 * 1024;
  var labelsEl = document.getElementById("map-labels"), T = labelsEl ? JSON.parse(labelsEl.textContent) : {};
  function t(id, fields) {  // the page's labels (#map-labels, in its language)
    var s = T[id] || id;
    Object.keys(fields || {}).forEach(function (k) { s = s.split("{" + k + "}").join(fields[k]); });
    return s;
  }
  var STYLE = {  // kind → circle marker style (the map legend's colours)
    location: { radius: 8, color: "#1a1a1a", weight: 3, fillColor: "#ffffff", fillOpacity: 1 },
    construction: { radius: 6, color: "#c0392b", weight: 2, fillOpacity: 0.8 },
    transit: { radius: 4, color: "#1e8449", weight: 2, fillOpacity: 1 },
    station: { radius: 9, color: "#6c3483", weight: 3, fillOpacity: 0.6 }
  };
  var OTHER = { radius: 5, color: "#555555", weight: 2, fillOpacity: 0.6 };

  var PLANNED = "#2e86c1", RUNNING = "In uitvoering";  // GIPOD's status of a running work (Dutch, as published)
  function markerStyle(q) {
    var s = STYLE[q.kind] || OTHER;
    return q.kind === "construction" && q.status !== RUNNING ? L.extend({}, s, { color: PLANNED }) : s;
  }
  function isNum(v) { return typeof v === "number" && isFinite(v); }
  function props(f) { return f.properties && typeof f.properties === "object" ? f.properties : {}; }
  /* The key figures of one feature: the API's own members, unchanged (none → ""). */
  function facts(q) {
    var loc = q.location && typeof q.location === "object" ? q.location : null;
    var reading = q.reading && typeof q.reading === "object" ? q.reading : null;
    return {
      kind: String(q.kind || ""),
      id: q.id !== undefined ? String(q.id) : (loc && loc.id ? String(loc.id) : ""),
      name: String(q.description || q.title || q.name || (loc && (loc.name || (isNum(loc.lat) && isNum(loc.lng) && loc.lat + ", " + loc.lng))) || ""),
      status: String(q.status || q.severity || (reading && reading.status) || ""),
      km: isNum(q.distanceKm) ? String(q.distanceKm) : (isNum(q.radiusKm) ? t("gj.radius", { km: q.radiusKm }) : ""),
      no2: reading && isNum(reading.value) ? String(reading.value) : (isNum(q.value) ? String(q.value) : "")
    };
  }
  function popup(x) {
    var box = document.createElement("div");
    [x.kind + (x.id ? " " + x.id : ""), x.name, x.status, x.km && (x.km + " km"), x.no2 && ("NO2 " + x.no2 + " µg/m³")]
      .forEach(function (line) { if (line) { var d = document.createElement("div"); d.textContent = line; box.appendChild(d); } });
    return box;
  }
  /* RFC 7946 shape checks L.geoJSON does not make itself; throws a readable Error. */
  function check(doc) {
    if (!doc || typeof doc !== "object" || doc.type !== "FeatureCollection" || !Array.isArray(doc.features)) {
      throw new Error(t("gj.not_fc"));
    }
    doc.features.forEach(function (f, i) {
      if (!f || f.type !== "Feature") { throw new Error(t("gj.not_feature", { i: i + 1 })); }
      if (f.geometry !== null && (typeof f.geometry !== "object" || typeof f.geometry.type !== "string")) {
        throw new Error(t("gj.bad_geometry", { i: i + 1 }));
      }
    });
  }
  function say(text, bad) { status.textContent = text; status.className = bad ? "notice warn" : "hint"; }
  function clear() {
    if (overlay) { map.removeLayer(overlay); overlay = null; }
    while (tbody.firstChild) { tbody.removeChild(tbody.firstChild); }
    table.hidden = true;
    el.dataset.geojsonFeatures = "0";
  }
  function row(x, layer) {
    var tr = document.createElement("tr");
    tr.setAttribute("data-testid", "geojson-feature");
    [[t("col.kind"), x.kind], [t("col.id"), x.id], [t("field.name"), x.name], [t("col.status"), x.status], ["km", x.km], ["NO2 µg/m³", x.no2]]
      .forEach(function (c) { var td = document.createElement("td"); td.setAttribute("data-label", c[0]); td.textContent = c[1]; tr.appendChild(td); });
    var td = document.createElement("td");
    td.setAttribute("data-label", t("col.map"));
    if (layer) {  // keyboard route to the map: the button pans there and opens the popup
      var b = document.createElement("button"); b.type = "button"; b.className = "secondary"; b.textContent = t("gj.show");
      b.setAttribute("aria-label", t("gj.show_on_map", { what: (x.kind + " " + x.id).trim() }));
      b.addEventListener("click", function () {
        if (layer.getBounds) { map.fitBounds(layer.getBounds().pad(0.2), { maxZoom: 16 }); } else { map.setView(layer.getLatLng(), Math.max(map.getZoom(), 15)); }
        layer.openPopup(); el.scrollIntoView({ block: "nearest" });
      });
      td.appendChild(b);
    } else { td.textContent = t("gj.no_position"); }
    tr.appendChild(td);
    tbody.appendChild(tr);
  }
  function draw(doc, name) {
    var layers = [], drawn = 0;
    var group = L.geoJSON(doc, {
      pointToLayer: function (f, at) { return L.circleMarker(at, markerStyle(props(f))); },
      style: function (f) { var s = markerStyle(props(f)); return { color: s.color, weight: s.weight }; },
      onEachFeature: function (f, layer) { layer.bindPopup(popup(facts(props(f)))); layers.push([f, layer]); }
    });
    doc.features.forEach(function (f) {
      var hit = null;
      layers.forEach(function (p) { if (p[0] === f) { hit = p[1]; } });
      if (hit) { drawn += 1; }
      row(facts(props(f)), hit);
    });
    overlay = group.addTo(map);
    if (drawn) {  // Leaflet drops a view change asked for during a zoom animation: fit once that has ended
      var fit = function () { map.fitBounds(group.getBounds().pad(0.1), { maxZoom: 16 }); };
      if (map._animatingZoom) { map.once("zoomend", fit); } else { fit(); }
    }
    table.hidden = false;
    el.dataset.geojsonFeatures = String(drawn);
    say(t("gj.opened", { name: name, n: doc.features.length, drawn: drawn }), false);
  }
  function open(file) {
    clear();
    function failed(why) { say(t("gj.failed", { name: file.name, why: why }), true); }
    if (file.size > MAX_BYTES) { failed(t("gj.too_big")); return; }
    var reader = new FileReader();
    reader.onerror = function () { say(t("gj.unreadable", { name: file.name }), true); };
    reader.onload = function () {
      var doc;
      try { doc = JSON.parse(reader.result); } catch (e) { failed(t("gj.not_json", { error: e.message })); return; }
      try { check(doc); draw(doc, file.name); } catch (e) { clear(); failed(String(e.message).replace(/\.$/, "")); }
    };
    reader.readAsText(file);
  }
  input.addEventListener("change", function () { if (input.files && input.files[0]) { open(input.files[0]); } });
}());
