import Foundation
import HTTPTypes
import Hummingbird

/// The console (`GET /console`, docs/evaluation-rules.md#reading-decision-records): a project's
/// zones on a map and a device's recent fixes as a trail, each fix marked by its decision, its
/// reasons on selection, the event log beside it. One self-contained page: its script and
/// style are inline and it fetches nothing but this service's own API (and map tiles, when a
/// tile URL is configured); the management key is entered on the page and kept in the tab's
/// session storage only.
enum ConsolePage {
    static func add<Context: RequestContext>(to router: Router<Context>, tiles: String?) {
        let page = html(tiles: tiles)
        let tileOrigin = tiles.flatMap(origin(of:)).map { " " + $0 } ?? ""
        let policy =
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; "
            + "img-src 'self' data:\(tileOrigin); base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
        router.get("/console") { _, _ in
            Response(
                status: .ok,
                headers: [
                    .contentType: "text/html; charset=utf-8", HTTPField.Name("Content-Security-Policy")!: policy,
                    .cacheControl: "no-store", HTTPField.Name("Referrer-Policy")!: "no-referrer",
                ],
                body: .init(byteBuffer: ByteBuffer(string: page)))
        }
    }

    /// The scheme, host and port of a tile URL template, for the page's content security policy.
    static func origin(of template: String) -> String? {
        guard let url = URL(string: template.replacingOccurrences(of: "{", with: "").replacingOccurrences(of: "}", with: "")),
            let scheme = url.scheme, let host = url.host
        else { return nil }
        return "\(scheme)://\(host)" + (url.port.map { ":\($0)" } ?? "")
    }

    static func html(tiles: String?) -> String {
        let escaped = (tiles ?? "").replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "\"", with: "&quot;")
            .replacingOccurrences(of: "<", with: "&lt;")
        return template.replacingOccurrences(of: "%TILES%", with: escaped)
    }

    static let template = #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="checkin-tiles" content="%TILES%">
        <title>checkin console</title>
        <style>
          body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1d2330; background: #f4f5f7; }
          header { display: flex; gap: 8px; align-items: center; padding: 8px 12px; background: #1d2330; color: #fff; }
          header h1 { font-size: 16px; margin: 0 12px 0 0; }
          header input { padding: 4px 6px; border: 0; border-radius: 3px; }
          header button { padding: 4px 12px; border: 0; border-radius: 3px; background: #4c8bf5; color: #fff; cursor: pointer; }
          #status { margin-left: auto; font-size: 12px; opacity: .8; }
          main { display: grid; grid-template-columns: minmax(400px, 3fr) minmax(280px, 2fr); gap: 12px; padding: 12px; }
          #map { width: 100%; height: 600px; background: #e8ecf2; border: 1px solid #c9ced8; border-radius: 4px; }
          aside section { background: #fff; border: 1px solid #c9ced8; border-radius: 4px; padding: 8px 12px; margin-bottom: 12px; }
          aside h2 { font-size: 14px; margin: 0 0 6px; }
          .zone { fill: rgba(76, 139, 245, .15); stroke: #4c8bf5; stroke-width: 1.5; }
          .geoline { fill: none; stroke: #8a4cf5; stroke-width: 3; }
          .zone-label { font-size: 11px; fill: #2b4c8c; }
          .trail { fill: none; stroke: #555; stroke-width: 1.5; stroke-dasharray: 4 3; }
          .fix { stroke: #fff; stroke-width: 1.5; cursor: pointer; }
          .fix.selected { stroke: #000; stroke-width: 3; }
          .fix-checked-in { fill: #1a9c4b; } .fix-checked-out { fill: #2166d4; } .fix-entered { fill: #e0a100; }
          .fix-left { fill: #7c8aa5; } .fix-ignored { fill: #d43c2f; } .fix-late, .fix-duplicate { fill: #a0a0a0; }
          .fix-evaluated { fill: #3b4252; }
          .legend span { display: inline-block; width: 10px; height: 10px; border-radius: 5px; margin: 0 3px 0 10px; }
          .legend .fix-checked-in { background: #1a9c4b; } .legend .fix-checked-out { background: #2166d4; }
          .legend .fix-entered { background: #e0a100; } .legend .fix-left { background: #7c8aa5; }
          .legend .fix-ignored { background: #d43c2f; } .legend .fix-late { background: #a0a0a0; }
          .legend .fix-evaluated { background: #3b4252; }
          ul { list-style: none; padding: 0; margin: 0; }
          li { padding: 3px 0; border-bottom: 1px solid #eef0f3; }
          .reason { font-weight: 600; color: #b3261e; }
          .muted { color: #6b7385; font-size: 12px; }
          #error { color: #b3261e; }
        </style>
        </head>
        <body>
        <header>
          <h1>checkin</h1>
          <form id="controls">
            <input id="key" type="password" placeholder="management key" autocomplete="off" size="28">
            <input id="device" placeholder="device id" size="20">
            <button id="load" type="submit">Show</button>
          </form>
          <span id="status">enter a management key and a device</span>
        </header>
        <main>
          <div>
            <svg id="map" viewBox="0 0 800 600" preserveAspectRatio="xMidYMid meet" role="img" aria-label="zones and trail">
              <g id="tiles"></g><g id="zones"></g><g id="trail"></g>
            </svg>
            <div class="legend muted">
              <span class="fix-checked-in"></span>checked in <span class="fix-checked-out"></span>checked out
              <span class="fix-entered"></span>entered, no check-in <span class="fix-ignored"></span>ignored
              <span class="fix-left"></span>left <span class="fix-late"></span>late or resent
              <span class="fix-evaluated"></span>nothing changed
            </div>
          </div>
          <aside>
            <section><h2>Selected fix</h2><div id="details" class="muted">select a fix on the map</div></section>
            <section><h2>Device</h2><div id="device-view" class="muted">-</div></section>
            <section><h2>Event log</h2><ul id="events"></ul></section>
            <div id="error"></div>
          </aside>
        </main>
        <script>
        "use strict";
        const tiles = document.querySelector('meta[name="checkin-tiles"]').content;
        const W = 800, H = 600, SVG = "http://www.w3.org/2000/svg";
        let key = "", records = [];

        function el(tag, attributes, text) {
          const node = tag === "svg" || ["g", "circle", "path", "polyline", "text", "image", "title"].includes(tag)
            ? document.createElementNS(SVG, tag) : document.createElement(tag);
          for (const [name, value] of Object.entries(attributes || {})) node.setAttribute(name, value);
          if (text !== undefined) node.textContent = text;
          return node;
        }

        async function api(path) {
          const response = await fetch(path, { headers: { "Authorization": "Bearer " + key } });
          const body = await response.json().catch(() => ({}));
          if (!response.ok) throw new Error(path.split("?")[0] + ": " + (body.detail || body.title || response.status));
          return body;
        }

        // Web Mercator, in units of the whole world (0...1), as map tiles are cut.
        function project(lon, lat) {
          const s = Math.sin(Math.max(-85, Math.min(85, lat)) * Math.PI / 180);
          return [(lon + 180) / 360, 0.5 - Math.log((1 + s) / (1 - s)) / (4 * Math.PI)];
        }

        function fenceShapes(zone) {
          const shapes = [];
          for (const fence of zone.fences || []) {
            const g = fence.geometry || {};
            if (g.type === "Point") shapes.push({ kind: "circle", centre: g.coordinates, radius: fence.radius || 0, fence: fence.id });
            if (g.type === "Polygon") shapes.push({ kind: "polygon", rings: g.coordinates, fence: fence.id });
            if (g.type === "MultiPolygon") for (const p of g.coordinates) shapes.push({ kind: "polygon", rings: p, fence: fence.id });
            if (g.type === "LineString") shapes.push({ kind: "line", points: g.coordinates, fence: fence.id });
          }
          return shapes;
        }

        function positions(shape) {
          if (shape.kind === "circle") {
            const dLat = shape.radius / 111195, dLon = dLat / Math.max(0.01, Math.cos(shape.centre[1] * Math.PI / 180));
            return [[shape.centre[0] - dLon, shape.centre[1] - dLat], [shape.centre[0] + dLon, shape.centre[1] + dLat]];
          }
          return shape.kind === "polygon" ? shape.rings.flat() : shape.points;
        }

        // The view: the trail and the zones its decisions name (and a margin) when there is a trail, else every zone.
        function viewOf(zones) {
          const named = new Set(records.flatMap(r => r.entries.map(e => e.zoneId)));
          let points = records.map(r => [r.location.lon, r.location.lat])
            .concat(zones.filter(z => named.has(z.id)).flatMap(z => fenceShapes(z).flatMap(positions)));
          if (points.length === 0) points = zones.flatMap(z => fenceShapes(z).flatMap(positions));
          if (points.length === 0) points = [[0, 0]];
          const xy = points.map(p => project(p[0], p[1]));
          let [x0, y0, x1, y1] = [Math.min(...xy.map(p => p[0])), Math.min(...xy.map(p => p[1])),
                                  Math.max(...xy.map(p => p[0])), Math.max(...xy.map(p => p[1]))];
          const span = Math.max(x1 - x0, (y1 - y0) * W / H, 600 / 40075016);
          const cx = (x0 + x1) / 2, cy = (y0 + y1) / 2, scale = W / (span * 1.3);
          return { scale, x: cx - W / 2 / scale, y: cy - H / 2 / scale };
        }

        function toScreen(view, lon, lat) {
          const [x, y] = project(lon, lat);
          return [(x - view.x) * view.scale, (y - view.y) * view.scale];
        }

        function drawTiles(view) {
          const layer = document.getElementById("tiles");
          layer.replaceChildren();
          if (!tiles) return;
          const z = Math.max(0, Math.min(19, Math.round(Math.log2(view.scale / 256))));
          const n = 2 ** z, size = view.scale / n;
          for (let tx = Math.floor(view.x * n); tx <= Math.floor((view.x + W / view.scale) * n); tx++) {
            for (let ty = Math.floor(view.y * n); ty <= Math.floor((view.y + H / view.scale) * n); ty++) {
              if (tx < 0 || ty < 0 || tx >= n || ty >= n) continue;
              const href = tiles.replace("{z}", z).replace("{x}", tx).replace("{y}", ty);
              layer.append(el("image", { href, x: (tx / n - view.x) * view.scale, y: (ty / n - view.y) * view.scale,
                                         width: size, height: size }));
            }
          }
        }

        function drawZones(view, zones) {
          const layer = document.getElementById("zones");
          layer.replaceChildren();
          for (const zone of zones) {
            for (const shape of fenceShapes(zone)) {
              let node;
              if (shape.kind === "circle") {
                const [x, y] = toScreen(view, shape.centre[0], shape.centre[1]);
                const [, edge] = toScreen(view, shape.centre[0], shape.centre[1] + shape.radius / 111195);
                node = el("circle", { cx: x, cy: y, r: Math.max(1, y - edge), class: "zone" });
              } else if (shape.kind === "polygon") {
                const d = shape.rings.map(ring => "M" + ring.map(p => toScreen(view, p[0], p[1]).join(",")).join("L") + "Z").join("");
                node = el("path", { d, class: "zone", "fill-rule": "evenodd" });
              } else {
                node = el("polyline", { points: shape.points.map(p => toScreen(view, p[0], p[1]).join(",")).join(" "), class: "geoline" });
              }
              node.dataset.zoneId = zone.id;
              node.append(el("title", {}, zone.id + " / " + shape.fence));
              layer.append(node);
              const anchor = shape.kind === "circle" ? [shape.centre[0], shape.centre[1] - shape.radius / 111195] : positions(shape)[0];
              const [lx, ly] = toScreen(view, anchor[0], anchor[1]);
              if (lx > -50 && lx < W + 50 && ly > -50 && ly < H + 50) layer.append(el("text", { x: lx, y: ly + 14, class: "zone-label", "text-anchor": "middle" }, zone.id));
            }
          }
        }

        function drawTrail(view) {
          const layer = document.getElementById("trail");
          layer.replaceChildren();
          layer.append(el("polyline", { class: "trail", points: records.map(r => toScreen(view, r.location.lon, r.location.lat).join(",")).join(" ") }));
          records.forEach((record, index) => {
            const [x, y] = toScreen(view, record.location.lon, record.location.lat);
            const outcome = summary(record);
            const dot = el("circle", { cx: x, cy: y, r: 6, class: "fix fix-" + outcome });
            dot.dataset.index = index;
            dot.dataset.fixId = record.fixId || "";
            dot.dataset.outcome = outcome;
            dot.append(el("title", {}, record.timestamp + " " + outcome));
            dot.addEventListener("click", () => select(index));
            layer.append(dot);
          });
        }

        function summary(record) {
          for (const outcome of ["checked-in", "checked-out", "late", "duplicate", "ignored", "entered", "left"]) {
            if (record.entries.some(e => e.outcome === outcome)) return outcome;
          }
          return "evaluated";
        }

        function select(index) {
          const record = records[index];
          document.querySelectorAll(".fix.selected").forEach(n => n.classList.remove("selected"));
          document.querySelector('.fix[data-index="' + index + '"]').classList.add("selected");
          const details = document.getElementById("details");
          details.className = "";
          details.replaceChildren(
            el("div", {}, record.timestamp + (record.fixId ? "  fix " + record.fixId : "")),
            el("div", { class: "muted" }, record.location.lat + ", " + record.location.lon
              + (record.location.accuracy !== undefined ? "  ±" + record.location.accuracy + " m" : "")
              + (record.location.speed !== undefined ? "  " + record.location.speed + " m/s" : "") + "  " + record.mode));
          const list = el("ul", { id: "entries" });
          if (record.entries.length === 0) list.append(el("li", { class: "muted" }, "no zone concerned"));
          for (const entry of record.entries) {
            const item = el("li", {});
            item.append(el("span", {}, entry.outcome + (entry.zoneId ? " " + entry.zoneId : "") + (entry.fenceId ? " (" + entry.fenceId + ")" : "")));
            if (entry.reason) item.append(el("span", { class: "reason" }, " " + entry.reason));
            const numbers = Object.entries(entry.detail || {}).map(([k, v]) => k + "=" + v).join("  ");
            if (numbers) item.append(el("div", { class: "muted" }, numbers));
            list.append(item);
          }
          details.append(list);
        }

        function showDevice(view) {
          const box = document.getElementById("device-view");
          if (!view) { box.textContent = "no state kept"; return; }
          const lines = ["sequence " + view.sequence];
          for (const c of view.openCheckIns) lines.push("checked in at " + c.zoneId + " since " + c.since);
          for (const z of view.insideWithoutCheckIn) lines.push("inside " + z.zoneId + " without a check-in" + (z.reason ? ": " + z.reason : ""));
          for (const m of view.minimumRetriggerTimes) lines.push("MRT of " + m.zoneId + " until " + m.until);
          if (view.staleCheckOutAt) lines.push("times out at " + view.staleCheckOutAt);
          box.className = "";
          box.replaceChildren(...lines.map(line => el("div", {}, line)));
        }

        function showEvents(events) {
          const list = document.getElementById("events");
          list.replaceChildren();
          if (events.length === 0) list.append(el("li", { class: "muted" }, "no events"));
          for (const logged of events) {
            const e = logged.event;
            const item = el("li", {}, (e.checkOutTime || e.location.timestamp) + "  " + e.type + "  " + e.zone.id + "  #" + e.sequence);
            item.dataset.eventId = e.eventId;
            for (const d of logged.deliveries) item.append(el("div", { class: "muted" }, d.endpointId + ": " + d.status + ", " + d.attempts + " attempt(s)"));
            list.append(item);
          }
        }

        async function show(device, selectFix) {
          const status = document.getElementById("status");
          document.getElementById("error").textContent = "";
          status.textContent = "loading…";
          try {
            const zones = (await api("/v1/zones")).zones || [];
            const page = await api("/v1/devices/" + encodeURIComponent(device) + "/decisions?limit=200");
            records = page.decisions.slice().reverse();
            const events = (await api("/v1/events?deviceId=" + encodeURIComponent(device) + "&limit=100")).events;
            const deviceView = await api("/v1/devices/" + encodeURIComponent(device)).catch(() => null);
            const view = viewOf(zones);
            drawTiles(view);
            drawZones(view, zones);
            drawTrail(view);
            showEvents(events);
            showDevice(deviceView);
            status.textContent = zones.length + " zones, " + records.length + " fixes, " + events.length + " events";
            if (selectFix) {
              const dot = [...document.querySelectorAll(".fix")].find(n => n.dataset.fixId === selectFix);
              if (dot) dot.dispatchEvent(new MouseEvent("click", { bubbles: true }));
            }
            document.body.dataset.state = "loaded";
          } catch (error) {
            document.getElementById("error").textContent = error.message;
            status.textContent = "";
            document.body.dataset.state = "failed";
          }
        }

        document.getElementById("controls").addEventListener("submit", event => {
          event.preventDefault();
          key = document.getElementById("key").value.trim();
          sessionStorage.setItem("checkin-key", key);
          show(document.getElementById("device").value.trim());
        });

        // #key=…&device=…&select=<fixId> opens a device directly (the fragment never reaches the server).
        const fragment = new URLSearchParams(location.hash.slice(1));
        key = fragment.get("key") || sessionStorage.getItem("checkin-key") || "";
        document.getElementById("key").value = key;
        if (fragment.get("device")) {
          document.getElementById("device").value = fragment.get("device");
          show(fragment.get("device"), fragment.get("select"));
        }
        </script>
        </body>
        </html>
        """#
}
