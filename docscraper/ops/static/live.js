// docscraper's dashboard: refresh the crawls table (and a source page's "Crawl" line) from /api/status every
// 2 seconds. Text is set with textContent only: nothing from the server is parsed as HTML.
(function () {
  "use strict";
  var table = document.querySelector("table[data-live]");
  var running = document.querySelector("[data-live-source]");
  if (!table && !running) { return; }
  var note = document.getElementById("live-note");
  if (note) { note.textContent = "Updated live."; }

  function duration(seconds) {
    seconds = Math.max(0, Math.floor(seconds || 0));
    if (seconds < 60) { return seconds + "s"; }
    if (seconds < 3600) { return Math.floor(seconds / 60) + "m" + String(seconds % 60).padStart(2, "0") + "s"; }
    return Math.floor(seconds / 3600) + "h" + String(Math.floor(seconds % 3600 / 60)).padStart(2, "0") + "m";
  }
  function when(value) { return value ? String(value).replace("T", " ").slice(0, 19) + "Z" : "-"; }
  function cell(row, text, cls) {
    var td = document.createElement("td");
    if (cls) { td.className = cls; }
    td.textContent = text;
    row.appendChild(td);
    return td;
  }
  function rows(runs) {
    var body = table.tBodies[0];
    var fresh = document.createElement("tbody");
    runs.forEach(function (run) {
      var pages = (run.progress && run.progress.pages) || {};
      var rate = (run.progress && run.progress.rate) || {};
      var tr = document.createElement("tr");
      tr.setAttribute("data-run", run.run_id);
      var link = document.createElement("a");
      link.href = "/sources/" + encodeURIComponent(run.source);
      link.textContent = run.source;
      cell(tr, "").appendChild(link);
      var state = document.createElement("span");
      state.className = "state " + run.state;
      state.textContent = run.state;
      cell(tr, "").appendChild(state);
      cell(tr, run.run_id);
      cell(tr, when(run.started_at));
      cell(tr, duration(run.elapsed_s), "num");
      ["done", "known", "queued", "new", "changed", "unchanged", "failed"].forEach(function (key) {
        cell(tr, String(pages[key] || 0), "num");
      });
      cell(tr, (rate.recent || 0).toFixed(1), "num");
      cell(tr, run.result || "");
      fresh.appendChild(tr);
    });
    if (!runs.length) {
      var empty = document.createElement("tr");
      empty.className = "empty";
      cell(empty, "No crawl recorded yet.").colSpan = 14;
      fresh.appendChild(empty);
    }
    table.replaceChild(fresh, body);
  }
  function refresh() {
    fetch("/api/status", { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (answer) { return answer.ok ? answer.json() : null; })
      .then(function (data) {
        if (!data) { return; }
        if (table) { rows(data.runs || []); }
        if (running) {
          var name = running.getAttribute("data-live-source");
          var now = (data.runs || []).filter(function (r) { return r.source === name && r.state === "running"; })[0];
          var pages = now && now.progress && now.progress.pages;
          running.textContent = now ? "running (run " + now.run_id + "): " + ((pages && pages.done) || 0) + " of "
            + ((pages && pages.known) || 0) + " pages done" : "not running";
        }
      })
      .catch(function () { /* the server restarts: the next round tries again */ });
  }
  window.setInterval(refresh, 2000);
  refresh();
}());
