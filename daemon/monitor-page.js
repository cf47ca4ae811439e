
"use strict";
// The monitor's script. It asks only its own origin (relative URLs) and builds every element with
// textContent: names and fields come from workers and are never read as markup.
(function () {
  const MONITOR_EVERY_MS = 2000;
  const POPULATION_EVERY_MS = 5000;
  const SVG = "http://www.w3.org/2000/svg"; // a namespace name, not a request
  const body = document.body;
  let sortKey = "user", sortDesc = false, lastPopulation = null;

  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }
  function td(text, cls) { return el("td", text, cls); }
  function known(v) { return v !== null && v !== undefined; }
  function num(v, digits) { return known(v) ? Number(v).toFixed(digits) : "–"; }
  function pct(v) { return known(v) ? Math.round(v * 100) + "%" : "–"; }
  function span(ms) {
    if (!known(ms)) return "–";
    if (ms < 1000) return ms + " ms";
    if (ms < 120000) return (ms / 1000).toFixed(1) + " s";
    return Math.round(ms / 60000) + " min";
  }
  function heat(v, admission) { return v >= admission ? "hot" : v >= admission * 0.75 ? "warm" : ""; }
  function replaceRows(tbody, rows) {
    while (tbody.firstChild) tbody.removeChild(tbody.firstChild);
    for (const r of rows) tbody.appendChild(r);
  }
  function list(ul, items) {
    while (ul.firstChild) ul.removeChild(ul.firstChild);
    for (const t of items) ul.appendChild(el("li", t));
  }

  async function getJSON(path) {
    const r = await fetch(path, { cache: "no-store", credentials: "same-origin" });
    if (!r.ok) throw new Error(path + " answered " + r.status);
    return r.json();
  }

  // ---- workers ----

  function bar(value, admission) {
    const wrap = el("div", null, "bar");
    const fill = el("div", null, "fill " + heat(value, admission));
    fill.style.width = Math.min(100, Math.max(0, value * 100)) + "%";
    const tick = el("div", null, "tick");
    tick.style.left = Math.min(100, admission * 100) + "%";
    wrap.appendChild(fill);
    wrap.appendChild(tick);
    return wrap;
  }

  function history(values, rows, admission) {
    const w = 180, h = 28, step = w / Math.max(rows, 1);
    const svg = document.createElementNS(SVG, "svg");
    svg.setAttribute("class", "history");
    svg.setAttribute("width", w);
    svg.setAttribute("height", h);
    svg.setAttribute("viewBox", "0 0 " + w + " " + h);
    const title = document.createElementNS(SVG, "title");
    title.textContent = values.length + " of " + rows + " rows; oldest on the left";
    svg.appendChild(title);
    const offset = rows - values.length; // the window fills from the right
    values.forEach(function (v, i) {
      if (!known(v)) return; // a row without any component: a gap, not a zero
      const r = document.createElementNS(SVG, "rect");
      const bh = Math.max(1, Math.min(1, v) * h);
      r.setAttribute("x", ((offset + i) * step).toFixed(2));
      r.setAttribute("y", (h - bh).toFixed(2));
      r.setAttribute("width", Math.max(1, step - 0.5).toFixed(2));
      r.setAttribute("height", bh.toFixed(2));
      const c = heat(v, admission);
      if (c) r.setAttribute("class", c);
      svg.appendChild(r);
    });
    const line = document.createElementNS(SVG, "line");
    const y = (h - admission * h).toFixed(2);
    line.setAttribute("x1", 0);
    line.setAttribute("x2", w);
    line.setAttribute("y1", y);
    line.setAttribute("y2", y);
    svg.appendChild(line);
    return svg;
  }

  function stateCell(w) {
    const cell = td(w.shown + (w.reception ? " · reception" : ""));
    if (w.freshness !== "fresh" && w.freshness !== "new")
      cell.appendChild(el("div", w.freshness + " for " + span(w.not_fresh_ms), "state-held"));
    if (w.unhealthy) {
      cell.appendChild(el("div", "out of new work: " + w.unhealthy, "state-held"));
      cell.classList.add("held");
    }
    if (w.held) {
      cell.appendChild(el("div", w.held.decision + " " + w.held.kind + ": " + w.held.reason, "state-held"));
      cell.classList.add("held");
    }
    return cell;
  }

  function componentCell(w, name) {
    const v = w.components[name];
    return td(pct(v), "num" + (w.bottleneck === name ? " bottleneck" : "") + (known(v) ? "" : " muted"));
  }

  function workerRow(w, d) {
    const tr = el("tr", null, "worker");
    tr.dataset.worker = w.name;
    tr.dataset.users = w.users;
    tr.dataset.state = w.shown;
    tr.appendChild(td(w.name));
    tr.appendChild(stateCell(w));
    const occ = td(null);
    occ.appendChild(bar(w.occupancy, d.admission_threshold));
    occ.appendChild(el("span", pct(w.occupancy), "bar-label"));
    tr.appendChild(occ);
    for (const c of ["cpu", "memory", "executor"]) tr.appendChild(componentCell(w, c));
    tr.appendChild(td(w.users, "num users"));
    tr.appendChild(td(num(w.rps, 1), "num"));
    tr.appendChild(td(num(w.p50_ms, 1) + " / " + num(w.p99_ms, 1) + " ms", "num"));
    tr.appendChild(td(known(w.errors_total) ? w.errors_total + " (" + num(w.errors_per_s, 2) + "/s)" : "–", "num"));
    const hist = td(null);
    hist.appendChild(history(w.history, d.window_rows, d.admission_threshold));
    tr.appendChild(hist);
    return tr;
  }

  // ---- ledger, decisions, moves ----

  function ledger(d) {
    const dl = document.getElementById("ledger");
    while (dl.firstChild) dl.removeChild(dl.firstChild);
    const l = d.ledger;
    const items = [
      ["workers in the ledger (N)", l.n],
      ["capacity C", num(l.capacity, 3)],
      ["occupied O", num(l.occupied, 3)],
      ["headroom H = C − O", num(l.headroom, 3)],
      ["margin", num(l.margin, 2)],
      ["compaction when H >", num(l.threshold, 3) +
        (l.over_threshold ? (l.n > l.min_workers ? " (H is over it)" : " (H is over it; at min_workers)") : "")],
    ];
    for (const [k, v] of items) { dl.appendChild(el("dt", k)); dl.appendChild(el("dd", v)); }
    const dec = d.last_decision;
    document.getElementById("decision").textContent = dec
      ? "Last decision (" + span(dec.ago_ms) + " ago): " + dec.what + " — " + dec.reason
      : "No decision journaled yet.";
    const holds = [];
    for (const [name, h] of Object.entries(d.holds))
      if (h) holds.push(name.replace("_", "-") + " " + h.kind + " for " + span(h.for_ms) + ": " + h.reason);
    list(document.getElementById("holds"), holds);
  }

  function moves(d) {
    const dr = d.drain;
    document.getElementById("drain").textContent = dr
      ? "Draining " + dr.worker + " for " + span(dr.for_ms) + ": " + dr.moved + " of " + dr.users_at_start +
        " users moved, " + dr.users_left + " left (" + dr.why + ")"
      : "No drain under way.";
    replaceRows(document.querySelector("#moves-now tbody"), d.moves.in_progress.map(function (m) {
      const tr = el("tr", null, "move");
      for (const v of [m.id, m.user, m.from, m.to, m.step + (m.repoint ? " (re-point)" : ""), span(m.for_ms), m.why])
        tr.appendChild(td(v));
      return tr;
    }));
    replaceRows(document.querySelector("#moves-recent tbody"), d.moves.recent.map(function (m) {
      const tr = el("tr", null, "move-ended");
      for (const v of [m.id, m.user, m.from, m.to, m.outcome, span(m.pause_ms), m.bytes, span(m.ago_ms) + " ago"])
        tr.appendChild(td(v));
      return tr;
    }));
  }

  function render(d) {
    document.getElementById("group").textContent = d.group;
    document.title = "elastic-pool " + d.group;
    replaceRows(document.querySelector("#workers tbody"), d.workers.map(function (w) { return workerRow(w, d); }));
    const drift = [];
    for (const w of d.workers)
      for (const x of w.drift)
        drift.push("drift on " + w.name + ": the worker reports " + x.reported + " " + x.register +
                   ", the commander knows of " + x.expected + " (for " + x.reports + " reports, " + span(x.for_ms) + ")");
    list(document.getElementById("drift"), drift);
    ledger(d);
    moves(d);
    const users = d.workers.reduce(function (s, w) { return s + w.users; }, 0);
    const fe = d.frontend;
    document.getElementById("summary").textContent = d.workers.length + " workers, " + users + " users" +
      (fe ? ", " + fe.connections + " client connections (" + fe.h2_connections + " h2c), " + fe.streams +
            " open requests, " + fe.requests + " requests" : "") +
      " · updated " + new Date().toLocaleTimeString();
  }

  // ---- population ----

  function populationRows(p) {
    const rows = [];
    for (const w of p.workers)
      for (const u of w.users)
        rows.push({
          user: u.user, worker: w.worker,
          where: (u.placed ? "placed" : u.placed_on ? "placed on " + u.placed_on : "not placed") +
                 (u.listed === true ? ", listed" : u.listed === false ? ", NOT listed" : ", listing unknown"),
          requests: u.requests, seconds: u.seconds, last_seen_ms_ago: u.last_seen_ms_ago,
          app: u.app ? Object.entries(u.app).map(function (e) { return e[0] + "=" + JSON.stringify(e[1]); }).join(" ") : "",
        });
    rows.sort(function (a, b) {
      const x = a[sortKey], y = b[sortKey];
      const c = !known(x) ? (known(y) ? 1 : 0) : !known(y) ? -1
              : typeof x === "number" ? x - y : String(x).localeCompare(String(y));
      return sortDesc ? -c : c;
    });
    return rows;
  }

  function renderPopulation(p) {
    lastPopulation = p;
    document.getElementById("population-summary").textContent = p.users + " users on " + p.workers.length +
      " workers; " + p.answered + " of " + p.asked + " workers answered " + p.target + " within " + span(p.timeout_ms) +
      " (took " + span(p.elapsed_ms) + ")";
    list(document.getElementById("population-errors"), p.workers.filter(function (w) { return w.status === "error"; })
      .map(function (w) { return w.worker + ": " + w.error; }));
    replaceRows(document.querySelector("#population tbody"), populationRows(p).map(function (r) {
      const tr = el("tr", null, "user");
      tr.dataset.user = r.user;
      tr.dataset.worker = r.worker;
      tr.appendChild(td(r.user));
      tr.appendChild(td(r.worker));
      tr.appendChild(td(r.where));
      tr.appendChild(td(known(r.requests) ? r.requests : "–", "num"));
      tr.appendChild(td(num(r.seconds, 3), "num"));
      tr.appendChild(td(known(r.last_seen_ms_ago) ? span(r.last_seen_ms_ago) + " ago" : "–", "num"));
      tr.appendChild(td(r.app));
      return tr;
    }));
    for (const th of document.querySelectorAll("#population th")) {
      th.classList.toggle("sorted-asc", th.dataset.key === sortKey && !sortDesc);
      th.classList.toggle("sorted-desc", th.dataset.key === sortKey && sortDesc);
    }
  }

  for (const th of document.querySelectorAll("#population th"))
    th.addEventListener("click", function () {
      if (sortKey === th.dataset.key) sortDesc = !sortDesc; else { sortKey = th.dataset.key; sortDesc = false; }
      if (lastPopulation) renderPopulation(lastPopulation);
    });

  // ---- polling: one request of each kind at a time, the next after the previous ended ----

  function showError(e) {
    const p = document.getElementById("poll-error");
    p.hidden = !e;
    p.textContent = e ? "poll failed: " + e.message : "";
  }

  async function pollMonitor() {
    try {
      render(await getJSON("/_commander/monitor.json"));
      body.dataset.polls = Number(body.dataset.polls) + 1;
      showError(null);
    } catch (e) {
      showError(e);
    }
    setTimeout(pollMonitor, MONITOR_EVERY_MS);
  }

  async function pollPopulation() {
    try {
      renderPopulation(await getJSON("/_commander/population"));
      body.dataset.populationPolls = Number(body.dataset.populationPolls) + 1;
    } catch (e) {
      showError(e);
    }
    setTimeout(pollPopulation, POPULATION_EVERY_MS);
  }

  pollMonitor();
  pollPopulation();
})();
