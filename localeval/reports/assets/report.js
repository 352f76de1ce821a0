// localeval HTML report: filter, sort, expand, and open the case named in the address (#case-3).
// Everything is already on the page; this script only shows, hides and reorders it.
(function () {
  "use strict";
  var grid = document.getElementById("cases");
  if (!grid) { return; }
  var cases = Array.prototype.slice.call(grid.querySelectorAll("details.case"));
  var text = document.getElementById("filter-text");
  var status = document.getElementById("filter-status");
  var shown = document.getElementById("shown");

  // What the text filter searches: the case's name and location, and every input.
  cases.forEach(function (c) {
    var name = c.querySelector("summary .name");
    var inputs = c.querySelector(".inputs .fields");
    c.searchText = ((name ? name.textContent : "") + "\n" + (inputs ? inputs.textContent : "")).toLowerCase();
  });

  function matches(c, needle, wanted) {
    if (wanted === "failed" && c.dataset.failed !== "1") { return false; }
    if (wanted === "errored" && c.dataset.errored !== "1") { return false; }
    return needle === "" || c.searchText.indexOf(needle) !== -1;
  }

  function applyFilter() {
    var needle = text.value.trim().toLowerCase();
    var wanted = status.value;
    var count = 0;
    cases.forEach(function (c) {
      var keep = matches(c, needle, wanted);
      c.classList.toggle("hidden", !keep);
      if (keep) { count += 1; }
    });
    shown.textContent = count + " of " + cases.length + " cases";
  }

  // Sorting: by the clicked column's data-sort values; cases without a score go last.
  function sortKey(c, col, type) {
    var cell = c.querySelector("summary").children[col];
    var raw = cell ? cell.getAttribute("data-sort") : "";
    if (raw === null || raw === "") { return null; }
    return type === "number" ? parseFloat(raw) : raw;
  }

  function sortBy(button) {
    var col = parseInt(button.getAttribute("data-col"), 10);
    var type = button.getAttribute("data-type");
    var descending = button.getAttribute("aria-sort") === "ascending";
    grid.querySelectorAll(".head button").forEach(function (b) { b.removeAttribute("aria-sort"); });
    button.setAttribute("aria-sort", descending ? "descending" : "ascending");
    var keyed = cases.map(function (c, i) { return { c: c, k: sortKey(c, col, type), i: i }; });
    keyed.sort(function (a, b) {
      if (a.k === null || b.k === null) { return a.k === b.k ? a.i - b.i : (a.k === null ? 1 : -1); }
      var order = a.k < b.k ? -1 : a.k > b.k ? 1 : a.i - b.i;
      return descending ? -order : order;
    });
    cases = keyed.map(function (x) { return x.c; });
    cases.forEach(function (c) { grid.appendChild(c); });
  }

  // #case-3 in the address opens that case and scrolls to it, even when a filter hid it.
  function openFromHash() {
    var id = decodeURIComponent(window.location.hash.slice(1));
    var target = id ? document.getElementById(id) : null;
    if (!target || !target.classList.contains("case")) { return; }
    if (target.classList.contains("hidden")) {
      text.value = "";
      status.value = "all";
      applyFilter();
    }
    target.open = true;
    target.scrollIntoView({ block: "start" });
  }

  text.addEventListener("input", applyFilter);
  status.addEventListener("change", applyFilter);
  grid.querySelectorAll(".head button").forEach(function (b) {
    b.addEventListener("click", function () { sortBy(b); });
  });
  document.getElementById("expand-all").addEventListener("click", function () {
    cases.forEach(function (c) { if (!c.classList.contains("hidden")) { c.open = true; } });
  });
  document.getElementById("collapse-all").addEventListener("click", function () {
    cases.forEach(function (c) { c.open = false; });
  });
  window.addEventListener("hashchange", openFromHash);
  openFromHash();
})();
