/* Dashboard map: Leaflet (served by us, from npm) over our own vector base layers; no CDN, no tiles unless
   MAP_TILE_URL is set. Mode "pick": a click (or Enter on the focused map = its centre) fills the lat/lng
   fields. Mode "view": draws the point's works, station and detour stops (given in the page as JSON, so a
   point shown is one counted call); a click shows that point. */
(function () {
  "use strict";
  var el = document.getElementById("map");
  if (!el || !window.L) { return; }
  var ANTWERP = [51.2194, 4.4025];
  var map = L.map(el, { center: ANTWERP, zoom: 12, keyboard: true });
  el.urbanMap = map;  // for geojson-open.js (opens a saved GeoJSON answer over this map)
  if (el.dataset.tiles) {
    L.tileLayer(el.dataset.tiles, { attribution: el.dataset.attribution || "", maxZoom: 19 }).addTo(map);
  }
  var STYLE = {
    boundary: { color: "#0b5394", weight: 2, fill: false },
    municipality: { color: "#9a9a9a", weight: 0.7, fill: false },
    lez: { color: "#b35c00", weight: 2, fillColor: "#f0a500", fillOpacity: 0.15 },
    river: { color: "#2d7fc1", weight: 0.5, dashArray: "2 4", fillColor: "#9cc9ee", fillOpacity: 0.06 }
  };
  function baseStyle(f) {
    var s = STYLE[f.properties.layer] || {};
    if (f.properties.layer === "river" && f.properties.part === "centerline") { return { color: "#2d7fc1", weight: 3 }; }
    return s;
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
  var pending = [getJSON(el.dataset.basemap).then(function (fc) {
    L.geoJSON(fc, { style: baseStyle, interactive: false }).addTo(map);
  })];

  var latInput = document.getElementById("lat"), lngInput = document.getElementById("lng");
  var marker = null;
  function put(lat, lng) {
    if (marker) { marker.setLatLng([lat, lng]); } else { marker = L.circleMarker([lat, lng], { radius: 8, color: "#1a1a1a", weight: 3, fillColor: "#ffffff", fillOpacity: 1 }).addTo(map); }
  }
  function picked(latlng) {
    var lat = latlng.lat.toFixed(6), lng = latlng.lng.toFixed(6);
    if (el.dataset.mode === "pick") {
      latInput.value = lat; lngInput.value = lng; put(latlng.lat, latlng.lng);
      setStatus("Picked " + lat + ", " + lng + ". Fill in a name and save.");
    } else {
      window.location.assign(window.location.pathname + "?lat=" + lat + "&lng=" + lng);
    }
  }
  map.on("click", function (e) { picked(e.latlng); });
  el.addEventListener("keydown", function (e) { if (e.key === "Enter") { picked(map.getCenter()); } });
  if (el.dataset.mode === "pick" && latInput.value && lngInput.value && !isNaN(+latInput.value) && !isNaN(+lngInput.value)) {
    put(+latInput.value, +lngInput.value); map.setView([+latInput.value, +lngInput.value], 14);
  }

  function text(t) { var span = document.createElement("span"); span.textContent = t; return span; }  // upstream text is never HTML
  var COLORS = { running: "#c0392b", planned: "#2e86c1", station: "#6c3483", stop: "#1e8449" };
  var drawn = document.getElementById("map-point");  // the page's own data (JSON, never executed)
  if (drawn) {
    pending.push(Promise.resolve(JSON.parse(drawn.textContent)).then(function (body) {
      var p = body.point, layer = L.featureGroup().addTo(map);
      L.circle([p.lat, p.lng], { radius: body.radiusKm * 1000, color: "#1a1a1a", weight: 1, dashArray: "4 4", fill: false, interactive: false }).addTo(layer);
      body.features.features.forEach(function (f) {
        var c = f.geometry.coordinates, q = f.properties, at = [c[1], c[0]], m;
        if (q.kind === "point") { put(at[0], at[1]); return; }
        if (q.kind === "work") { m = L.circleMarker(at, { radius: 6, color: q.running ? COLORS.running : COLORS.planned, weight: 2, fillOpacity: 0.8 }).bindTooltip(text(q.description + " · " + q.status + " · " + q.distanceKm + " km")); }
        else if (q.kind === "station") { m = L.circleMarker(at, { radius: 9, color: COLORS.station, weight: 3, fillOpacity: 0.6 }).bindTooltip(text("NO2 " + q.name + ": " + q.value + " µg/m³")); }
        else { m = L.circleMarker(at, { radius: 4, color: COLORS.stop, weight: 2, fillOpacity: 1 }).bindTooltip(text("Stop " + q.name + " (detour " + q.detour + ")")); }
        m.feature = f; m.addTo(layer);
      });
      map.fitBounds(layer.getBounds().pad(0.05));
      el.dataset.features = String(body.features.features.length);
    }));
  }
  Promise.all(pending).then(function () { el.dataset.ready = "1"; },
    function (err) { el.dataset.ready = "error"; setStatus("The map could not load: " + err.message); });
}());
