/* The page's behaviour: draws the matrix, the cell details and the upgrade view from the embedded data.
   Plain DOM, no framework; text always goes in through textContent, never as HTML. */
(function () {
  "use strict";

  var DATA = JSON.parse(document.getElementById("report-data").textContent);
  var DIMS = DATA.dims;
  var VERDICTS = DATA.verdicts; // [name, glyph, label, meaning]
  var ROWS = DATA.rows; // [family, case, strategy, portability, paramsLabel, paramsJson, portabilityLabel]
  var CELLS = DATA.cells; // [row, env, runtime, opset, exporter, shape_mode, device, dtype, verdict, own] (indices)
  var CELL_DIMS = DATA.cellDims;
  var VI = CELL_DIMS.length + 1; // where a cell holds its verdict
  var OWN = VI + 1; // 1: judged by its own environment's runtime (an exporting cell); 0: a replay
  var ROW_FIELD = { family: 0, case: 1, strategy: 2 };

  function el(tag, attrs) {
    var node = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (key) {
        var value = attrs[key];
        if (value === null || value === undefined || value === false) return;
        if (key === "text") node.textContent = String(value);
        else if (key === "className") node.className = value;
        else node.setAttribute(key, value === true ? "" : String(value));
      });
    }
    for (var i = 2; i < arguments.length; i++) append(node, arguments[i]);
    return node;
  }

  function append(node, child) {
    if (child === null || child === undefined || child === false) return;
    if (Array.isArray(child)) { child.forEach(function (c) { append(node, c); }); return; }
    node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }

  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }

  function fmtSeconds(s) {
    if (s === null || s === undefined || typeof s !== "number") return "—";
    if (s >= 1) return s.toFixed(2) + " s";
    if (s >= 1e-3) return (s * 1e3).toPrecision(3) + " ms";
    return (s * 1e6).toPrecision(3) + " µs";
  }

  function fmtBytes(b) {
    if (b === null || b === undefined || typeof b !== "number") return "—";
    var units = [["GiB", 1073741824], ["MiB", 1048576], ["KiB", 1024]];
    for (var i = 0; i < units.length; i++) if (Math.abs(b) >= units[i][1]) return (b / units[i][1]).toFixed(1) + " " + units[i][0];
    return b + " B";
  }

  function fmtNum(x) {
    if (x === null || x === undefined) return "—";
    if (typeof x !== "number") return String(x);
    if (x === 0) return "0";
    return Math.abs(x) >= 0.01 && Math.abs(x) < 1e5 ? String(Number(x.toPrecision(4))) : x.toExponential(2);
  }

  function fmtRatio(r) {
    if (r === null || r === undefined) return "—";
    return (r < 10 ? r.toFixed(2) : r.toFixed(0)) + "×";
  }

  function cellValue(cell, dim) {
    if (dim in ROW_FIELD) return ROWS[cell[0]][ROW_FIELD[dim]];
    if (dim === "verdict") return VERDICTS[cell[VI]][0];
    var k = CELL_DIMS.indexOf(dim);
    return DIMS[dim][cell[1 + k]];
  }

  function chip(index, extraTitle) {
    var cell = CELLS[index];
    var verdict = VERDICTS[cell[VI]];
    var row = ROWS[cell[0]];
    var title = verdict[2] + " — " + row[1] + " · " + row[4] + " · " + row[2] + " · " +
      CELL_DIMS.map(function (d) { return cellValue(cell, d); }).join(" · ") + (extraTitle ? "\n" + extraTitle : "");
    return el("button", { type: "button", className: "chip v-" + verdict[0], "data-cell": index, title: title, "aria-label": title, text: verdict[1] });
  }

  function badge(portability, label, seen) {
    return el("span", { className: "badge port-" + portability, title: label + (seen ? "\n" + seen : ""), text: label });
  }

  function evidence(row) {
    return DATA.evidence[row[0] + "/" + row[2]] || "";
  }

  /* ---------------- the matrix ---------------- */

  var filterBox = document.getElementById("filters");
  var pivotSelect = document.getElementById("pivot");
  var matrixTable = document.getElementById("matrix-table");
  var matrixCount = document.getElementById("matrix-count");

  function currentFilters() {
    var filters = {};
    filterBox.querySelectorAll("select[data-dim]").forEach(function (s) { if (s.value) filters[s.dataset.dim] = s.value; });
    return filters;
  }

  function keep(cell, filters) {
    for (var dim in filters) {
      var want = filters[dim];
      var have = String(cellValue(cell, dim));
      if (dim === "verdict" && want === "!pass") { if (have === "pass") return false; }
      else if (dim === "runtime" && want === "=own") { if (cell[OWN] !== 1) return false; }
      else if (have !== want) return false;
    }
    return true;
  }

  function drawMatrix() {
    var filters = currentFilters();
    var axes = DATA.pivots[Number(pivotSelect.value) || 0][1];
    var chipDims = CELL_DIMS.filter(function (d) { return axes.indexOf(d) < 0; });
    var colKeys = {}, rowSet = {}, slots = {}, shown = 0;
    for (var i = 0; i < CELLS.length; i++) {
      var cell = CELLS[i];
      if (!keep(cell, filters)) continue;
      shown++;
      var col = axes.map(function (d) { return cell[1 + CELL_DIMS.indexOf(d)]; });
      var colKey = col.join("|");
      colKeys[colKey] = col;
      rowSet[cell[0]] = true;
      var slotKey = cell[0] + "/" + colKey;
      (slots[slotKey] = slots[slotKey] || []).push(i);
    }
    var cols = Object.keys(colKeys).map(function (k) { return colKeys[k]; }).sort(function (a, b) {
      for (var j = 0; j < a.length; j++) if (a[j] !== b[j]) return a[j] - b[j];
      return 0;
    });
    var rows = Object.keys(rowSet).map(Number).sort(function (a, b) { return a - b; });
    clear(matrixTable);
    matrixCount.textContent = shown + " of " + CELLS.length + " cells · " + rows.length + " rows × " + cols.length +
      " columns" + (chipDims.length ? " · squares in a slot vary by " + chipDims.map(function (d) { return DATA.dimLabels[d]; }).join(", ") : "");
    if (!shown) {
      var converted = filters.precision && filters.precision !== "fp32" && filters.runtime === "=own";
      var why = converted ? " Converted graphs are judged in replays only: set the runtime filter to all, or to a runtime." : "";
      matrixTable.appendChild(el("tbody", null, el("tr", null, el("td", { className: "empty", text: "No cell matches these filters." + why }))));
      return;
    }

    var thead = el("thead");
    var top = el("tr", null, el("th", { className: "corner", rowspan: axes.length, text: "case · strategy · params" }));
    if (axes.length === 2) {
      var spans = [];
      cols.forEach(function (c) {
        var last = spans[spans.length - 1];
        if (last && last.value === c[0]) last.count++; else spans.push({ value: c[0], count: 1 });
      });
      spans.forEach(function (s) { top.appendChild(el("th", { colspan: s.count, text: DIMS[axes[0]][s.value] })); });
      var second = el("tr");
      cols.forEach(function (c) { second.appendChild(el("th", { text: (axes[1] === "opset" ? "opset " : "") + DIMS[axes[1]][c[1]] })); });
      thead.appendChild(top); thead.appendChild(second);
    } else {
      cols.forEach(function (c) { top.appendChild(el("th", { text: DIMS[axes[0]][c[0]] })); });
      thead.appendChild(top);
    }
    matrixTable.appendChild(thead);

    var tbody = el("tbody");
    var lastCase = null;
    rows.forEach(function (r) {
      var row = ROWS[r];
      if (row[1] !== lastCase) {
        lastCase = row[1];
        var caseRow = el("tr", { className: "case-row" }, el("th", { text: row[1] + "  (" + row[0] + ")" }));
        caseRow.appendChild(el("td", { colspan: cols.length }));
        tbody.appendChild(caseRow);
      }
      var tr = el("tr");
      tr.appendChild(el("th", null, el("div", { className: "row-head" },
        el("span", { className: "strategy", text: row[2] }),
        badge(row[3], DATA.portability[row[3]] ? shortPortability(row[3]) : row[3], evidence(row)),
        el("span", { className: "params", title: row[5], text: row[4] }))));
      cols.forEach(function (c) {
        var td = el("td");
        var inSlot = slots[r + "/" + c.join("|")] || [];
        inSlot.sort(function (a, b) {
          for (var j = 0; j < chipDims.length; j++) {
            var k = 1 + CELL_DIMS.indexOf(chipDims[j]);
            if (CELLS[a][k] !== CELLS[b][k]) return CELLS[a][k] - CELLS[b][k];
          }
          return a - b;
        });
        inSlot.forEach(function (index) { td.appendChild(chip(index)); });
        tr.appendChild(td);
      });
      tbody.appendChild(tr);
    });
    matrixTable.appendChild(tbody);
  }

  function shortPortability(p) {
    return DATA.portabilityShort[p] || p;
  }

  // Redrawn at once on each change: a redraw of thousands of cells takes a fraction of a second.
  filterBox.addEventListener("change", drawMatrix);
  document.getElementById("filters-reset").addEventListener("click", function () {
    filterBox.querySelectorAll("select[data-dim]").forEach(function (s) { s.value = s.dataset.default || ""; });
    pivotSelect.value = "0";
    drawMatrix();
  });

  /* ---------------- the details panel ---------------- */

  var panel = document.getElementById("details");
  var panelBody = document.getElementById("details-body");
  var panelTitle = document.getElementById("details-title");
  var selected = null;

  function kv(pairs) {
    var table = el("table", { className: "kv" });
    pairs.forEach(function (p) {
      if (p[1] === undefined) return;
      table.appendChild(el("tr", null, el("th", { text: p[0] }), el("td", null, p[1] === null ? "—" : p[1])));
    });
    return table;
  }

  var REPLAY_TIMING = "Timed in a replay, with a smaller latency budget (fewer samples) than the exporting cells.";

  function showRuntime(d) {
    var rt = DATA.runtimes[d.rt] || {};
    var replay = rt.record === "replay";
    panelBody.appendChild(el("h3", { text: replay ? "Runtime (a replay of the exported graph)" : "Runtime" }));
    var pairs = Object.keys(rt).map(function (k) { return [k, rt[k]]; });
    pairs.push(["artifact", d.a !== undefined ? d.a : (d.of !== undefined ? DATA.details[d.of].a : null)]);
    var origin = rt.precision && rt.precision !== "fp32" ? "converted from the graph exported by" : "exported by";
    if (d.of !== undefined) pairs.push([origin, el("span", null, chip(d.of), " " + cellValue(CELLS[d.of], "env") + " · " + cellValue(CELLS[d.of], "runtime"))]);
    if (d.jw !== undefined) pairs.push(["judged with", DATA.strings[d.jw] + " (the same graph but for the exporter's version, inputs and tolerance: its answer, measured once)"]);
    var named = pairs.filter(function (p) { return p[0] === "runtime"; })[0];
    if (named && rt.record === "export") named[1] = rt.runtime + " (the exporting environment's own)";
    if (named && rt.record === "conversion") named[1] = rt.runtime + " (the converter environment's: no runtime judged it)";
    panelBody.appendChild(kv(pairs));
    if (d.rp && d.rp.length) {
      panelBody.appendChild(el("h3", { text: "The same graph in other runtimes" }));
      var list = el("ul", { className: "replays" });
      d.rp.forEach(function (i) {
        var v = VERDICTS[CELLS[i][VI]];
        list.appendChild(el("li", null, chip(i), " " + cellValue(CELLS[i], "runtime") + ": " + v[2]));
      });
      panelBody.appendChild(list);
    }
  }

  function showDetails(index) {
    var cell = CELLS[index], d = DATA.details[index], row = ROWS[cell[0]], verdict = VERDICTS[cell[VI]];
    var base = d.of !== undefined ? DATA.details[d.of] : d; // a replay shares these with its exporting cell
    clear(panelBody);
    panelTitle.textContent = row[1] + " · " + row[4] + " · " + row[2];
    var env = cellValue(cell, "env"), opset = cellValue(cell, "opset");
    panelBody.appendChild(el("div", { className: "verdict-line" },
      el("span", { className: "chip v-" + verdict[0], text: verdict[1] }),
      el("strong", { text: verdict[2] }),
      el("span", { className: "muted", text: verdict[3] })));
    if (d.r !== null) panelBody.appendChild(el("p", null, el("strong", { text: "Reason: " }), DATA.strings[d.r]));

    panelBody.appendChild(el("h3", { text: "Cell" }));
    panelBody.appendChild(kv([
      ["environment", env], ["family · case", row[0] + " · " + row[1]], ["parameters", el("code", { text: row[5] })],
      ["strategy", el("span", null, row[2] + " ", badge(row[3], row[6]))],
      ["opset asked · actual", opset + " · " + (base.ao === null ? "none (no model)" : base.ao) + (base.ao !== null && base.ao !== opset ? "  (drift)" : "")],
      ["exporter", cellValue(cell, "exporter")], ["shape mode", cellValue(cell, "shape_mode")],
      ["device · dtype", cellValue(cell, "device") + " · " + cellValue(cell, "dtype")],
      ["tags", base.tags.length ? base.tags.join(", ") : null],
    ]));
    showRuntime(d);

    panelBody.appendChild(el("h3", { text: "Stages" }));
    if (!d.st.length) panelBody.appendChild(el("p", { className: "muted", text: "No stage ran." }));
    else {
      var stages = el("table", { className: "stages" }, el("thead", null, el("tr", null,
        el("th", { text: "stage" }), el("th", { text: "outcome" }), el("th", { className: "num", text: "seconds" }), el("th", { text: "error type" }))));
      var body = el("tbody");
      d.st.forEach(function (s) {
        body.appendChild(el("tr", null, el("td", { text: s[0] }), el("td", { className: "outcome-" + s[1], text: s[1] }),
          el("td", { className: "num", text: s[2] === null || s[2] === undefined || s[1] === "skipped" ? "—" : s[2].toFixed(3) }), el("td", null, s[3] ? el("code", { text: s[3] }) : null)));
        if (s[4] !== null && s[4] !== undefined) body.appendChild(el("tr", { className: "message-row" }, el("td", { colspan: 4 }, el("pre", { text: DATA.strings[s[4]] }))));
      });
      stages.appendChild(body);
      panelBody.appendChild(stages);
    }

    if (d.p) { // [max_abs, max_rel, atol, rtol, min_passing_atol, shapes_checked, mean_abs, psnr, p99_abs]
      var p = d.p;
      panelBody.appendChild(el("h3", { text: "Accuracy against eager PyTorch" }));
      panelBody.appendChild(kv([
        ["max abs difference", fmtNum(p[0])], ["max rel difference", fmtNum(p[1])],
        ["mean abs difference", p[6] === null || p[6] === undefined ? undefined : fmtNum(p[6])],
        ["99th-percentile abs difference", p[8] === null || p[8] === undefined ? undefined : fmtNum(p[8])],
        ["PSNR", p[7] === null || p[7] === undefined ? undefined : p[7].toFixed(1) + " dB"],
        ["atol · rtol", fmtNum(p[2]) + " · " + fmtNum(p[3])],
        ["smallest passing atol", fmtNum(p[4])], ["shapes checked", p[5]],
      ]));
    }
    if (d.dv) { // [trusted, where, sample, max abs, tolerance there, elements beyond it, of, note, reason]
      var dv = d.dv;
      panelBody.appendChild(el("h3", { text: "Where it first goes wrong" }));
      panelBody.appendChild(kv([
        ["against", dv[0] + " (a trusted run of the same graph)"], ["first diverging node", dv[1]],
        ["inputs", dv[2] || null], ["difference there", dv[3] === null ? null : fmtNum(dv[3])],
        ["tolerance there", dv[4] === null ? null : fmtNum(dv[4])],
        ["elements beyond it", dv[5] === null ? null : dv[5] + " of " + dv[6]],
        ["note", dv[7] === null ? undefined : dv[7]], ["why no node", dv[8] === null ? undefined : dv[8]],
      ]));
    }
    var targets = Object.keys(d.l);
    if (targets.length) {
      panelBody.appendChild(el("h3", { text: "Latency (median, IQR)" }));
      if (d.of !== undefined || cell[OWN] !== 1) panelBody.appendChild(el("p", { className: "muted small", text: REPLAY_TIMING }));
      panelBody.appendChild(kv(targets.map(function (t) {
        var m = d.l[t];
        return [t, "median " + fmtSeconds(m[0]) + " · IQR " + fmtSeconds(m[1]) + " · " + m[2] + " samples · " + m[3] + " threads" + (m[4] ? " · noisy (IQR over 10% of the median)" : "")];
      })));
    }
    var memTargets = Object.keys(d.m);
    if (memTargets.length) {
      panelBody.appendChild(el("h3", { text: "Memory: footprint (weights, arena, first run) and working set (one run)" }));
      panelBody.appendChild(kv(memTargets.map(function (t) {
        var method = d.m[t][1] === null || d.m[t][1] === undefined ? null : DATA.strings[d.m[t][1]];
        return [t, fmtBytes(d.m[t][0]) + " (" + (method || "method unknown") + ")"];
      })));
    }
    var x = base.x;
    if (x) {
      panelBody.appendChild(el("h3", { text: "Exported model" }));
      panelBody.appendChild(kv([
        ["nodes · size", (x.nodes === null ? "—" : x.nodes) + " · " + fmtBytes(x.bytes)],
        ["domains", x.domains.map(function (dom) { return dom === "" ? "ai.onnx" : dom; }).join(", ")],
        ["most used ops", x.ops.map(function (o) { return o[0] + " ×" + o[1]; }).join(", ")],
      ]));
    }
    panelBody.appendChild(el("h3", { text: "Environment fingerprint" }));
    var fp = DATA.fingerprints[base.f] || {};
    panelBody.appendChild(kv(Object.keys(fp).map(function (k) { return [k, fp[k]]; })));
    panelBody.appendChild(el("h3", { text: "Run" }));
    panelBody.appendChild(kv([["run id", DATA.strings[d.id[0]]], ["cell id", d.id[1] || base.id[1]], ["harness", DATA.strings[d.id[2]]],
      ["started · finished", d.t[0] + " · " + d.t[1]], ["wall", fmtSeconds(d.t[2])]]));

    if (selected) selected.forEach(function (b) { b.classList.remove("selected"); });
    selected = Array.prototype.slice.call(document.querySelectorAll('button.chip[data-cell="' + index + '"]'));
    selected.forEach(function (b) { b.classList.add("selected"); });
    panel.hidden = false;
    panel.scrollTop = 0;
  }

  document.addEventListener("click", function (event) {
    var target = event.target.closest ? event.target.closest("[data-cell]") : null;
    if (target) showDetails(Number(target.getAttribute("data-cell")));
  });
  document.getElementById("details-close").addEventListener("click", function () { panel.hidden = true; });
  document.addEventListener("keydown", function (event) { if (event.key === "Escape") panel.hidden = true; });

  /* ---------------- the advisor ---------------- */

  var advisorControls = document.getElementById("advisor-controls");
  function showAdvice() {
    if (!advisorControls) return;
    var want = {};
    advisorControls.querySelectorAll("select[data-adv]").forEach(function (s) { want[s.dataset.adv] = s.value; });
    var found = false;
    document.querySelectorAll("article.advice-card").forEach(function (card) {
      // No runtime chosen: the environment's own, whose exporting cells judged the graphs.
      var runtime = want.runtime ? card.dataset.runtime === want.runtime : card.dataset.home === "1";
      var match = runtime && card.dataset.env === want.env && card.dataset.opset === want.opset &&
        card.dataset.device === want.device && card.dataset.family === want.family &&
        card.dataset.precision === (want.precision || "fp32");
      card.hidden = !match;
      found = found || match;
    });
    document.getElementById("advisor-none").hidden = found;
    document.querySelectorAll("button.pick-button").forEach(function (b) {
      var card = document.getElementById(b.dataset.card);
      b.classList.toggle("selected", !!card && !card.hidden);
    });
  }
  if (advisorControls) {
    advisorControls.addEventListener("change", showAdvice);
    document.querySelectorAll("button.pick-button").forEach(function (button) {
      button.addEventListener("click", function () {
        var card = document.getElementById(button.dataset.card);
        ["env", "opset", "device", "family"].forEach(function (k) {
          advisorControls.querySelector('select[data-adv="' + k + '"]').value = card.dataset[k];
        });
        var runtimeSelect = advisorControls.querySelector('select[data-adv="runtime"]');
        if (runtimeSelect) runtimeSelect.value = card.dataset.home === "1" ? "" : card.dataset.runtime;
        var precisionSelect = advisorControls.querySelector('select[data-adv="precision"]');
        if (precisionSelect) precisionSelect.value = card.dataset.precision;
        showAdvice();
        card.scrollIntoView({ block: "nearest" });
      });
    });
    showAdvice();
  }

  /* ---------------- the upgrade view ---------------- */

  var oldSelect = document.getElementById("upgrade-old");
  var newSelect = document.getElementById("upgrade-new");
  var modeSelect = document.getElementById("upgrade-mode");
  var rtEnvSelect = document.getElementById("upgrade-env");
  var rtOldSelect = document.getElementById("upgrade-rt-old");
  var rtNewSelect = document.getElementById("upgrade-rt-new");
  var upgradeBody = document.getElementById("upgrade-body");
  var KINDS = {}; // name -> [label, tone]
  DATA.changeKinds.forEach(function (k) { KINDS[k[0]] = [k[1], k[2]]; });

  function candidateText(c) {
    if (c.length === 1) return el("span", { className: "muted", text: c[0] });
    return el("span", null, el("strong", { text: c[0] }), " ", badge(c[1], shortPortability(c[1])), " ", el("span", { className: "muted", text: c[2] + "/" + c[3] }));
  }

  function byRuntimes() { return !!modeSelect && modeSelect.value === "runtimes"; }

  // The pair the controls name: [entry or null, old side's name, new side's name, what to say when there is none].
  function chosenPair() {
    if (!byRuntimes()) {
      var o = oldSelect.value, n = newSelect.value;
      if (o === n) return [null, o, n, "Pick two different environments."];
      return [(DATA.upgrade.envs[o] || {})[n] || null, o, n, "No data for this pair."];
    }
    var env = rtEnvSelect.value, ro = rtOldSelect.value, rn = rtNewSelect.value;
    if (ro === rn) return [null, ro, rn, "Pick two different runtimes."];
    return [((DATA.upgrade.runtimes[env] || {})[ro] || {})[rn] || null, ro, rn,
      "No data for this pair: the page compares runtimes up the ladder, and from the environment's own runtime down."];
  }

  function noteText(kind, c) {
    var before = DATA.details[c[0]], after = DATA.details[c[1]];
    if (kind === "faster" || kind === "slower") return "latency " + fmtRatio(c[2]);
    if (kind === "accuracy") return "max abs " + fmtNum(before.p && before.p[0]) + " → " + fmtNum(after.p && after.p[0]);
    var reason = kind === "became_applicable" ? before.r : after.r;
    return reason !== null && reason !== undefined ? DATA.strings[reason] : "";
  }

  function changeRows(kind, changes, oldName, newName) {
    var table = el("table", { className: "upgrade-table changes" }, el("thead", null, el("tr", null,
      el("th", { text: "case · params" }), el("th", { text: "opset" }), el("th", { text: "exporter · shape · device · dtype" }),
      el("th", { text: oldName }), el("th", { text: newName }), el("th", { text: "note" }))));
    var body = el("tbody");
    changes.forEach(function (c) {
      var before = CELLS[c[0]], after = CELLS[c[1]], row = ROWS[before[0]];
      var note = noteText(kind, c);
      body.appendChild(el("tr", { className: "kind-" + kind },
        el("td", null, row[1] + " · ", el("span", { className: "params", title: row[5], text: row[4] })),
        el("td", { className: "num", text: cellValue(before, "opset") }),
        el("td", { text: ["exporter", "shape_mode", "device", "dtype"].map(function (d) { return cellValue(before, d); }).join(" · ") }),
        el("td", null, chip(c[0]), " " + VERDICTS[before[VI]][2]),
        el("td", null, chip(c[1]), " " + VERDICTS[after[VI]][2]),
        el("td", { className: "note", title: note, text: note.length > 160 ? note.slice(0, 160) + "…" : note })));
    });
    table.appendChild(body);
    return table;
  }

  function kindCounts(groups) {
    var counts = {};
    groups.forEach(function (g) { counts[g[2]] = (counts[g[2]] || 0) + g[3].length; });
    return counts;
  }

  function countPills(counts) {
    var box = el("span", { className: "kind-pills" });
    DATA.changeKinds.forEach(function (k) {
      if (counts[k[0]]) box.appendChild(el("span", { className: "pill tone-" + k[2] }, el("b", { text: counts[k[0]] }), " " + k[1]));
    });
    return box;
  }

  function drawGroups(pair, oldName, newName) {
    var total = pair.groups.reduce(function (n, g) { return n + g[3].length; }, 0);
    upgradeBody.appendChild(el("h3", { className: "sub", text: "Cells that change (" + total + "), by family, strategy and kind" }));
    if (!total) { upgradeBody.appendChild(el("p", { className: "empty", text: "No cell judged on both sides changes verdict, accuracy or latency by over 20%." })); return; }
    var families = [];
    pair.groups.forEach(function (g) {
      var last = families[families.length - 1];
      if (!last || last.name !== g[0]) families.push(last = { name: g[0], groups: [] });
      last.groups.push(g);
    });
    families.forEach(function (fam) {
      var box = el("details", { className: "change-family" }, el("summary", null, el("strong", { text: fam.name }), " ", countPills(kindCounts(fam.groups))));
      fam.groups.forEach(function (g) {
        var kind = KINDS[g[2]] || [g[2], "neutral"];
        var item = el("details", { className: "change-group tone-" + kind[1] },
          el("summary", null, el("span", { className: "strategy", text: g[1] }), " ", el("span", { className: "pill tone-" + kind[1] }, el("b", { text: g[3].length }), " " + kind[0])));
        item.addEventListener("toggle", function () {
          if (item.open && item.childNodes.length === 1) item.appendChild(changeRows(g[2], g[3], oldName, newName));
        });
        box.appendChild(item);
      });
      upgradeBody.appendChild(box);
    });
  }

  function drawSwitches(pair, oldName, newName) {
    upgradeBody.appendChild(el("h3", { className: "sub", text: byRuntimes() ? "What to use in " + newName : "What to use after the upgrade" }));
    var switches = el("table", { className: "upgrade-table switches" }, el("thead", null, el("tr", null,
      el("th", { text: "family" }), el("th", { className: "num", text: "opset" }), el("th", { text: "device" }),
      el("th", { text: "pick in " + oldName }), el("th", { text: "pick in " + newName }), el("th", { text: "what changes" }))));
    var sbody = el("tbody");
    pair.switches.forEach(function (s) {
      sbody.appendChild(el("tr", { className: s[5] ? "kind-changed" : null },
        el("td", { text: s[0] }), el("td", { className: "num", text: s[1] }), el("td", { text: s[2] }),
        el("td", null, candidateText(s[3])), el("td", { className: s[5] ? "changed" : null }, candidateText(s[4]),
          s[5] ? el("span", { className: "muted", text: "  (switch)" }) : null),
        el("td", { text: s[6] })));
    });
    switches.appendChild(sbody);
    upgradeBody.appendChild(switches);
  }

  function drawUpgrade() {
    clear(upgradeBody);
    var chosen = chosenPair(), pair = chosen[0];
    if (!pair) { upgradeBody.appendChild(el("p", { className: "empty", text: chosen[3] })); return; }
    upgradeBody.appendChild(el("div", { className: "upgrade-summary" }, countPills(pair.counts)));
    if (pair.gains.length) {
      var gains = el("ul", { className: "gains" });
      pair.gains.forEach(function (g) { gains.appendChild(el("li", { text: g })); });
      upgradeBody.appendChild(gains);
    }
    drawGroups(pair, chosen[1], chosen[2]);
    drawSwitches(pair, chosen[1], chosen[2]);
  }

  function fillRuntimes() {
    var option = rtEnvSelect.selectedOptions[0];
    var ladder = DATA.upgrade.ladders[rtEnvSelect.value] || [];
    [[rtOldSelect, option.dataset.old], [rtNewSelect, option.dataset.new]].forEach(function (pair) {
      clear(pair[0]);
      ladder.forEach(function (r) { pair[0].appendChild(el("option", { text: r, selected: r === pair[1] })); });
    });
  }

  function switchMode() {
    var runtimes = byRuntimes();
    document.getElementById("upgrade-envs").hidden = runtimes;
    document.getElementById("upgrade-runtimes").hidden = !runtimes;
    document.getElementById("upgrade-runtime-note").hidden = !runtimes;
    drawUpgrade();
  }

  oldSelect.addEventListener("change", drawUpgrade);
  newSelect.addEventListener("change", drawUpgrade);
  if (modeSelect) {
    modeSelect.addEventListener("change", switchMode);
    rtEnvSelect.addEventListener("change", function () { fillRuntimes(); drawUpgrade(); });
    rtOldSelect.addEventListener("change", drawUpgrade);
    rtNewSelect.addEventListener("change", drawUpgrade);
  }

  drawMatrix();
  drawUpgrade();
})();
