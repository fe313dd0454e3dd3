// Long tables on every page: a filter box, sorting by clicking a plain column header (headers that are links
// sort on the server), and pages of PAGE_SIZE rows. Rows stay in their <tbody> (boards group rows in sections).
// Text is only read and compared, never written as HTML.
(function () {
  "use strict";
  var PAGE_SIZE = 50;
  var FILTER_FROM = 12; // rows before a table gets a filter box

  function bodyRows(table) {
    var rows = [];
    Array.prototype.forEach.call(table.tBodies, function (tbody) {
      Array.prototype.forEach.call(tbody.rows, function (row) {
        if (!row.classList.contains("section-head") && !row.querySelector("td.empty")) rows.push(row);
      });
    });
    return rows;
  }

  function cellValue(row, index) {
    var cell = row.cells[index];
    var text = cell ? cell.textContent.trim() : "";
    var number = parseFloat(text.replace(/[,x×%]/g, ""));
    return { text: text.toLowerCase(), number: isNaN(number) ? null : number };
  }

  function enhance(table) {
    var rows = bodyRows(table);
    if (rows.length < FILTER_FROM) return;
    var state = { page: 0, filter: "" };
    var controls = document.createElement("div");
    controls.className = "table-controls";
    var input = document.createElement("input");
    input.type = "search";
    input.placeholder = "Filter these " + rows.length + " rows";
    input.setAttribute("aria-label", "Filter the table");
    input.className = "table-filter";
    controls.appendChild(input);
    var pager = document.createElement("nav");
    pager.className = "pages";
    var wrapper = table.parentNode.classList && table.parentNode.classList.contains("scroll") ? table.parentNode : table;
    wrapper.parentNode.insertBefore(controls, wrapper);
    wrapper.parentNode.insertBefore(pager, wrapper.nextSibling);

    function matching() {
      return bodyRows(table).filter(function (row) {
        return !state.filter || row.textContent.toLowerCase().indexOf(state.filter) !== -1;
      });
    }

    function button(label, page, disabled) {
      var b = document.createElement("button");
      b.type = "button";
      b.textContent = label;
      b.disabled = disabled;
      b.addEventListener("click", function () { state.page = page; draw(); });
      return b;
    }

    function draw() {
      var shown = matching();
      var pages = Math.max(1, Math.ceil(shown.length / PAGE_SIZE));
      if (state.page >= pages) state.page = pages - 1;
      var first = state.page * PAGE_SIZE;
      bodyRows(table).forEach(function (row) { row.hidden = true; });
      shown.slice(first, first + PAGE_SIZE).forEach(function (row) { row.hidden = false; });
      pager.textContent = "";
      var info = document.createElement("span");
      info.className = "meta";
      info.textContent = shown.length ? "Rows " + (first + 1) + "–" + Math.min(first + PAGE_SIZE, shown.length) +
        " of " + shown.length : "No row matches";
      pager.appendChild(info);
      if (pages > 1) {
        pager.appendChild(button("‹ Previous", state.page - 1, state.page === 0));
        pager.appendChild(button("Next ›", state.page + 1, state.page === pages - 1));
      }
    }

    input.addEventListener("input", function () { state.filter = input.value.trim().toLowerCase(); state.page = 0; draw(); });

    var headRow = table.tHead && table.tHead.rows[0];
    if (headRow) {
      Array.prototype.forEach.call(headRow.cells, function (th, index) {
        if (th.querySelector("a") || th.colSpan > 1) return;
        th.classList.add("sortable");
        th.tabIndex = 0;
        th.title = "Sort by this column";
        var descending = false;
        function sort() {
          descending = !descending;
          Array.prototype.forEach.call(table.tBodies, function (tbody) {
            var items = Array.prototype.filter.call(tbody.rows, function (r) { return !r.classList.contains("section-head"); });
            items.sort(function (a, b) {
              var x = cellValue(a, index), y = cellValue(b, index);
              var order = x.number !== null && y.number !== null ? x.number - y.number : x.text.localeCompare(y.text);
              return descending ? -order : order;
            });
            items.forEach(function (r) { tbody.appendChild(r); });
          });
          headRow.querySelectorAll("th").forEach(function (h) { h.removeAttribute("aria-sort"); });
          th.setAttribute("aria-sort", descending ? "descending" : "ascending");
          state.page = 0;
          draw();
        }
        th.addEventListener("click", sort);
        th.addEventListener("keydown", function (e) { if (e.key === "Enter") sort(); });
      });
    }
    draw();
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("main table.data").forEach(enhance);
  });
})();
