// The playground's page script: the controls, the answer, the heatmap and the loss table over
// window.revformerModel (model.js). revformer.web inlines it once per playground, with __ID__
// replaced by the playground's element id; its settings come from the JSON beside it.
(function () {
  var root = document.getElementById(__ID__);
  if (!root || root.dataset.ready) { return; }
  root.dataset.ready = "1";
  var O = JSON.parse(root.querySelector("script.rfp-options").textContent);
  var started = performance.now(), SVGNS = "http://www.w3.org/2000/svg", T = 14, ID = __ID__;
  var NAMES = {10: "<BOS>", 11: "<SEP>", 12: "<EOS>"};
  function name(t) { return t in NAMES ? NAMES[t] : String(t); }
  function say(key, vars) {  // a sentence of O.text (English or Chinese) with its {names} filled in
    return O.text[key].replace(/\{(\w+)\}/g, function (_, k) { return String(vars[k]); });
  }
  function $(selector) { return root.querySelector(selector); }
  function $$(selector) { return Array.prototype.slice.call(root.querySelectorAll(selector)); }
  function el(tag, attrs, text, svg) {
    var e = svg ? document.createElementNS(SVGNS, tag) : document.createElement(tag);
    for (var k in attrs) { e.setAttribute(k, attrs[k]); }
    if (text !== undefined) { e.textContent = text; }
    return e;
  }
  var alertBox = $(".rfp-error"), digitsBox = $(".rfp-digits"), groupBox = $(".rfp-group");
  var maskBox = $(".rfp-mask"), layerBox = $(".rfp-layer"), headBox = $(".rfp-head"), rowBox = $(".rfp-row");
  // what the heatmap shows: the selects and the thumbnails both set it, and both show it
  var state = {group: O.groups[0], digits: O.digits.split("").map(Number), result: null,
               layer: O.layer, head: String(O.head), row: O.row};
  function fail(message) { alertBox.textContent = message; root.classList.add("rfp-stale"); }

  function group() { return groupBox ? groupBox.value : O.groups[0]; }
  function knockout() {
    return $$("input.rfp-ko").filter(function (b) { return b.checked && !b.disabled; }).map(function (b) {
      return [Number(b.dataset.layer), Number(b.dataset.head)];
    });
  }
  function options() {
    var opts = {knockout: knockout()};
    if (maskBox) { opts.causal = maskBox.checked; }
    return opts;
  }
  // full-width digits (U+FF10-FF19, a Chinese keyboard's) are digits; spaces (U+3000 too) are dropped
  function asciiDigits(text) { return String(text).replace(/[\uff10-\uff19]/g, function (c) { return String(c.charCodeAt(0) - 0xff10); }).replace(/\s+/g, ""); }
  function readDigits() {  // the text as the model's input; the model says what is wrong with it
    if (!digitsBox) { return state.digits; }
    return asciiDigits(digitsBox.value).split("").map(function (c) { return /^[0-9]$/.test(c) ? Number(c) : c; });
  }

  function fillSelect(box, labels, values, keep) {
    if (!box) { return; }
    box.innerHTML = "";
    labels.forEach(function (label, i) { box.appendChild(el("option", {value: String(values[i])}, label)); });
    if (values.map(String).indexOf(String(keep)) >= 0) { box.value = String(keep); }
  }
  function headName(h) { return h === "mean" ? O.text.meanOfHeads : say("head", {h: h}); }
  function syncGroup() {  // the head choices, the mask's default and the knockout chips of this group
    var c = window.revformerModel.config(group()), labels = [], values = [];
    for (var h = 0; h < c.heads; h++) { labels.push(headName(h)); values.push(h); }
    labels.push(O.text.meanOfHeads); values.push("mean");
    if (state.head !== "mean" && Number(state.head) >= c.heads) { state.head = "mean"; }
    fillSelect(headBox, labels, values, state.head);
    if (maskBox) { maskBox.checked = c.causal; }
    $$(".rfp-ko-head, .rfp-thumb, .rfp-thumb-head").forEach(function (item) {  // one_head has head 0 only
      var absent = item.dataset.head !== "mean" && Number(item.dataset.head) >= c.heads;
      var box = item.querySelector("input");
      item.classList.toggle("rfp-absent", absent);
      if (box) { box.disabled = absent; if (absent) { box.checked = false; } }
      if (item.tagName === "BUTTON") { item.disabled = absent; }
    });
    syncAll();
  }
  function syncAll() {  // "all heads" is checked when every head of its layer is, mixed when some are
    $$("input.rfp-ko-all").forEach(function (all) {
      var boxes = $$('input.rfp-ko[data-layer="' + all.dataset.layer + '"]').filter(function (b) { return !b.disabled; });
      var on = boxes.filter(function (b) { return b.checked; }).length;
      all.checked = on === boxes.length;
      all.indeterminate = on > 0 && on < boxes.length;
    });
  }
  function noteMask() {
    var note = $(".rfp-mask-note");
    if (!note) { return; }
    var trained = window.revformerModel.config(group()).causal;
    note.textContent = maskBox.checked === trained ? O.text.asTrained : (trained ? O.text.trainedWith : O.text.trainedWithout);
  }

  function compute() {  // the answer, the attention on the generated sequence, the losses
    var M = window.revformerModel, digits = readDigits(), opts = options();
    var answer = M.generateWithProbabilities(group(), digits, opts);  // throws on a bad input
    var inputs = [10].concat(digits, [11], answer.tokens.slice(0, 6));  // the 14 inputs, teacher-forced
    state.digits = digits;
    state.result = {
      digits: digits, answer: answer, inputs: inputs, causal: M.config(group()).causal, opts: opts,
      attention: M.forward(group(), inputs, opts).attention,
      loss: O.controls.indexOf("loss") >= 0 ? M.answerLoss(group(), digits, opts) : null,
      base: O.controls.indexOf("loss") >= 0 ? M.answerLoss(group(), digits, {}) : null
    };
    if (maskBox) { state.result.causal = maskBox.checked; }
  }

  function update() {
    var typed = readDigits();  // the reader's own mistake, said in the page's language
    if (typed.length !== 6 || typed.some(function (d) { return typeof d !== "number"; })) {
      fail(say("badDigits", {text: digitsBox ? digitsBox.value : O.digits}));
      return;
    }
    try {
      compute();
    } catch (error) {
      fail(error.message);  // the last good drawing stays, dimmed
      return;
    }
    alertBox.textContent = "";
    root.classList.remove("rfp-stale");
    drawAnswer();
    drawLoss();
    draw();
    drawThumbs();
  }

  function percent(p) { return p > 0.9999 ? ">99.99" : (100 * p).toFixed(p > 0.99 ? 2 : 1); }  // the "%" apart
  function showPercent(cell, p, forced) {  // "99.98%", its "%" for a screen reader only (the legend says "(%)")
    cell.textContent = percent(p);
    cell.appendChild(el("span", {"class": "rfp-pct"}, "%"));
    if (forced) { cell.appendChild(document.createTextNode("*")); }
  }
  function loss(v) { return v.toPrecision(3); }  // 0.000213 or 2.31: three significant digits

  function drawAnswer() {  // the seven chips: the token, its probability, the reversal; a wrong one marked
    var r = state.result, want = r.digits.slice().reverse().concat([12]), wrong = [];
    r.answer.tokens.forEach(function (t, i) {
      var cell = $('td.rfp-tok[data-i="' + i + '"]'), truth = $('td.rfp-want[data-i="' + i + '"]');
      var right = t === want[i];
      cell.textContent = name(t);
      cell.classList.toggle("rfp-wrong", !right);
      cell.classList.toggle("rfp-special", t in NAMES);  // <EOS> in a smaller type keeps the chip narrow
      cell.parentNode.classList.toggle("rfp-wrong", !right);
      showPercent($('td.rfp-prob[data-i="' + i + '"]'), r.answer.probabilities[i], r.answer.forced[i]);
      truth.textContent = name(want[i]);
      truth.classList.toggle("rfp-special", want[i] in NAMES);
      if (!right) { wrong.push(8 + i); }
    });
    root.dataset.answer = r.answer.tokens.map(name).join(" ");
    var forced = r.answer.forced.indexOf(true) >= 0 ? O.text.forced : "";
    var words = {positions: wrong.join(O.text.comma), digits: r.digits.join(" "), want: want.map(name).join(" ")};
    var verdict = $(".rfp-verdict");
    verdict.textContent = say(wrong.length ? (wrong.length > 1 ? "wrongMany" : "wrongOne") : "right", words) + forced;
    verdict.className = "rfp-verdict " + (wrong.length ? "rfp-bad" : "rfp-ok");
  }

  function drawLoss() {
    var r = state.result;
    if (!r.loss) { return; }
    var full = [10].concat(r.digits, [11], r.digits.slice().reverse(), [12]), sum = 0, base = 0;
    r.loss.forEach(function (v, i) {
      var tr = $('table.rfp-loss tr[data-p="' + (7 + i) + '"]');
      tr.querySelector(".rfp-pos").textContent = (7 + i) + " " + name(full[7 + i]) + " \u2192 " + name(full[8 + i]);
      tr.querySelector(".rfp-loss-now").textContent = loss(v);
      tr.querySelector(".rfp-loss-base").textContent = loss(r.base[i]);
      tr.querySelector(".rfp-loss-bar div").style.width = (Math.min(1, v / 5) * 100).toFixed(1) + "%";
      sum += v; base += r.base[i];
    });
    var mean = $("tr.rfp-loss-mean");
    mean.querySelector(".rfp-loss-now").textContent = loss(sum / 7);
    mean.querySelector(".rfp-loss-base").textContent = loss(base / 7);
    root.dataset.loss = String(sum / 7);
  }

  function weights(layer, h) {  // [14][14]: one head's attention of a layer, or the mean of its heads
    var W = state.result.attention[layer], H = W.length, M = [];
    for (var q = 0; q < T; q++) {
      M.push([]);
      for (var k = 0; k < T; k++) {
        var v = 0;
        if (h === "mean") { for (var j = 0; j < H; j++) { v += W[j][q][k]; } v /= H; } else { v = W[Number(h)][q][k]; }
        M[q].push(v);
      }
    }
    return M;
  }
  function color(v) { return O.palette[Math.round(Math.max(0, Math.min(1, v)) * (O.palette.length - 1))]; }
  function label(i) { return i + "\u00b7" + name(state.result.inputs[i]); }  // "10·1", not 101
  function isMasked(q, k) { return state.result.causal && k > q; }  // the future: -inf before the softmax, weight 0

  // The heatmap's geometry, in the SVG's own units (it scales to the width; .rfp-body keeps its proportions,
  // 388/525 in _STYLE). Its text is 14 units: 12 px or more wherever the heatmap is shown 335 px wide or more
  // (a 390 px phone); LEFT and TOP hold the longest label, "0·<BOS>", across and upright.
  var C = 22, FONT = 14, LEFT = 74, TOP = 92, STRIP = 40, WIDTH = LEFT + C * T + 6;
  var STRIP_Y = TOP + C * T + 10, BAR_Y = STRIP_Y + STRIP + 30, HEIGHT = BAR_Y + 45;

  function draw() {  // the heatmap of one layer and head (or their mean), and the query row's bars
    var r = state.result, layer = state.layer, h = state.head, row = state.row;
    if (h !== "mean" && Number(h) >= r.attention[layer].length) { h = state.head = "mean"; }
    var M = weights(layer, h);
    state.shown = M;
    var next = row + 1 < T ? name(r.inputs[row + 1]) : name(r.answer.tokens[6]);
    $(".rfp-note").textContent = say("note", {row: row, token: name(r.inputs[row]), next: next});
    var body = $(".rfp-body");
    body.innerHTML = "";
    unread();  // a new drawing: the last cell read belongs to the old one
    var svg = el("svg", {viewBox: "0 0 " + WIDTH + " " + HEIGHT, role: "img", "class": "rfp-heatmap",
      "aria-label": say(r.causal ? "heatmapOn" : "heatmapOff", {group: group(), layer: layer, head: headName(h)})},
      undefined, true);
    var defs = el("defs", {}, undefined, true), pat = el("pattern", {id: ID + "-hatch", width: 5, height: 5,
      patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)"}, undefined, true);
    pat.appendChild(el("rect", {width: 5, height: 5, fill: "#f2f2f2", "class": "rfp-hatch-bg"}, undefined, true));
    pat.appendChild(el("line", {x1: 0, y1: 0, x2: 0, y2: 5, stroke: "#b0b0b0", "stroke-width": 2,
      "class": "rfp-hatch-line"}, undefined, true));
    defs.appendChild(pat); svg.appendChild(defs);
    state.labels = {rows: [], columns: []};
    for (var i = 0; i < T; i++) {
      state.labels.rows.push(svg.appendChild(el("text", {x: LEFT - 4, y: TOP + C * i + C * 0.73, "text-anchor": "end",
        "font-size": FONT, "font-weight": i === row ? "bold" : "normal"}, label(i), true)));
      state.labels.columns.push(svg.appendChild(el("text", {x: 0, y: 0, "font-size": FONT,
        transform: "translate(" + (LEFT + C * i + C * 0.73) + "," + (TOP - 4) + ") rotate(-90)"}, label(i), true)));
    }
    svg.appendChild(el("text", {x: LEFT, y: FONT, "font-size": FONT}, O.text.keyAxis, true));
    for (var q = 0; q < T; q++) {
      for (var k = 0; k < T; k++) {
        svg.appendChild(el("rect", {x: LEFT + C * k, y: TOP + C * q, width: C, height: C, "class": "rfp-cell",
          fill: isMasked(q, k) ? "url(#" + ID + "-hatch)" : color(M[q][k]), "data-q": q, "data-k": k,
          "data-value": M[q][k].toFixed(4)}, undefined, true));
      }
    }
    // the prompt/answer dividers: the answer queries start at row 7, the answer keys at column 8
    svg.appendChild(el("line", {x1: LEFT, x2: LEFT + C * T, y1: TOP + C * 7, y2: TOP + C * 7, stroke: "#ffffff",
      "stroke-width": 2, "pointer-events": "none"}, undefined, true));
    svg.appendChild(el("line", {x1: LEFT + C * 8, x2: LEFT + C * 8, y1: TOP, y2: TOP + C * T, stroke: "#ffffff",
      "stroke-width": 2, "stroke-dasharray": "4 3", "pointer-events": "none"}, undefined, true));
    for (q = 7; q <= 12; q++) {  // the reversal cells: answer query q reads the prompt digit at 13 - q
      svg.appendChild(el("rect", {x: LEFT + C * (13 - q) + 1, y: TOP + C * q + 1, width: C - 2, height: C - 2, fill: "none",
        stroke: "#ff3b30", "stroke-width": 2, "class": "rfp-expected", "pointer-events": "none"}, undefined, true));
    }
    svg.appendChild(el("rect", {x: LEFT - 1, y: TOP + C * row, width: C * T + 2, height: C, fill: "none",
      stroke: "#e6007e", "stroke-width": 2.5, "pointer-events": "none"}, undefined, true));
    drawStrip(svg, M, row);
    var steps = 28, cw = C * T / steps;
    for (var b = 0; b < steps; b++) {
      svg.appendChild(el("rect", {x: LEFT + b * cw, y: BAR_Y, width: cw + 0.5, height: 9, fill: color((b + 0.5) / steps)},
        undefined, true));
    }
    ["0", "0.5", "1"].forEach(function (text, n) {
      svg.appendChild(el("text", {x: LEFT + n * C * T / 2, y: BAR_Y + 9 + FONT + 1, "font-size": FONT,
        "text-anchor": ["start", "middle", "end"][n]}, text, true));
    });
    svg.appendChild(el("text", {x: LEFT + C * T / 2, y: BAR_Y + 9 + 2 * FONT + 3, "font-size": FONT,
      "text-anchor": "middle"}, O.text.weight, true));
    // the cell pointed at: a dark ring in a light halo, seen on the darkest and the lightest cells, light or dark
    state.hover = svg.appendChild(el("g", {"class": "rfp-hover", visibility: "hidden"}, undefined, true));
    state.hover.appendChild(el("rect", {x: -1, y: -1, width: C + 2, height: C + 2, "class": "rfp-hover-halo"},
      undefined, true));
    state.hover.appendChild(el("rect", {x: 0.5, y: 0.5, width: C - 1, height: C - 1, "class": "rfp-hover-ring"},
      undefined, true));
    body.appendChild(svg);
    drawBars(M, row);
  }

  function drawStrip(svg, M, row) {  // the query row's weights as bars under their key columns
    svg.appendChild(el("rect", {x: LEFT, y: STRIP_Y, width: C * T, height: STRIP, "class": "rfp-strip-bg"},
      undefined, true));
    for (var k = 0; k < T; k++) {
      var x = LEFT + C * k + 3, w = C - 6;
      if (isMasked(row, k)) {
        svg.appendChild(el("rect", {x: x, y: STRIP_Y + STRIP - 4, width: w, height: 4, fill: "url(#" + ID + "-hatch)",
          "class": "rfp-strip-hit", "data-q": row, "data-k": k}, undefined, true));
        continue;
      }
      var height = Math.max(0.5, Math.min(1, M[row][k]) * (STRIP - 2));
      svg.appendChild(el("rect", {x: x, y: STRIP_Y + STRIP - height, width: w, height: height, "class": "rfp-strip-bar",
        fill: "#3b528b", "pointer-events": "none"}, undefined, true));
      // a cell-high target over the bar, so pointing at a bar reads it like its cell
      svg.appendChild(el("rect", {x: LEFT + C * k, y: STRIP_Y, width: C, height: STRIP, fill: "transparent",
        "class": "rfp-strip-hit", "data-q": row, "data-k": k}, undefined, true));
    }
    if (row >= 7 && row <= 12) {  // the key this answer row should read
      svg.appendChild(el("rect", {x: LEFT + C * (13 - row) + 1, y: STRIP_Y + 1, width: C - 2, height: STRIP - 2,
        fill: "none", stroke: "#ff3b30", "stroke-width": 1.5, "pointer-events": "none"}, undefined, true));
    }
    svg.appendChild(el("text", {x: LEFT - 4, y: STRIP_Y + STRIP / 2 + 4.5, "text-anchor": "end", "font-size": FONT,
      "font-weight": "bold"}, label(row), true));
    svg.appendChild(el("text", {x: LEFT + C * T / 2, y: STRIP_Y + STRIP + FONT + 2, "font-size": FONT,
      "text-anchor": "middle"}, say("bars", {row: row}), true));
  }

  function drawBars(M, row) {  // the same weights as numbers, in the folded table under the heatmap
    var fold = $(".rfp-bars-box");
    if (!fold) { return; }
    fold.querySelector("summary").textContent = say("bars", {row: row});
    $$("table.rfp-bars tr").forEach(function (tr, k) {
      tr.className = row >= 7 && row <= 12 && k === 13 - row ? "rfp-expected" : "";
      tr.querySelector(".rfp-key").textContent = label(k);
      tr.querySelector(".rfp-bar").style.width = (isMasked(row, k) ? 0 : Math.min(1, M[row][k]) * 100).toFixed(1) + "%";
      tr.querySelector(".rfp-value").textContent = isMasked(row, k) ? O.text.masked : M[row][k].toFixed(3);
    });
  }

  function drawThumbs() {  // every head of both layers as a 14 x 14 image, masked cells left clear
    var off = knockout();
    $$("button.rfp-thumb").forEach(function (button) {
      var layer = Number(button.dataset.layer), h = button.dataset.head, canvas = button.querySelector("canvas");
      // a knocked-out head still attends (its output is zeroed after): its picture is drawn, faded and struck
      button.classList.toggle("rfp-off", off.some(function (p) { return p[0] === layer && String(p[1]) === h; }));
      button.setAttribute("aria-pressed", String(layer === state.layer && h === state.head));
      button.setAttribute("aria-label", say("pick", {layer: layer, head: headName(h)}));
      if (button.disabled || !canvas.getContext) { return; }
      var M = weights(layer, h), g = canvas.getContext("2d"), image = g.createImageData(T, T);
      for (var q = 0; q < T; q++) {
        for (var k = 0; k < T; k++) {
          var at = 4 * (q * T + k), hex = color(M[q][k]);
          image.data[at] = parseInt(hex.slice(1, 3), 16);
          image.data[at + 1] = parseInt(hex.slice(3, 5), 16);
          image.data[at + 2] = parseInt(hex.slice(5, 7), 16);
          image.data[at + 3] = isMasked(q, k) ? 0 : 255;
        }
      }
      g.putImageData(image, 0, 0);
    });
  }

  // ---- pointing at the heatmap: hover or tap reads a cell, a click picks its row --------------
  var readout = $(".rfp-readout");
  function read(q, k) {
    var masked = isMasked(q, k), value = masked ? O.text.masked : state.shown[q][k].toFixed(3);
    readout.textContent = say("readout", {q: q, qtoken: name(state.result.inputs[q]), k: k,
      ktoken: name(state.result.inputs[k]), weight: value});
    readout.classList.remove("rfp-hint");
    var box = state.hover;
    box.setAttribute("transform", "translate(" + (LEFT + C * k) + "," + (TOP + C * q) + ")");
    box.setAttribute("visibility", "visible");
    cool();
    state.labels.rows[q].classList.add("rfp-hot");
    state.labels.columns[k].classList.add("rfp-hot");
  }
  function unread() {  // back to the hint, nothing framed: the pointer left, or the drawing changed
    readout.textContent = O.text.hint;
    readout.classList.add("rfp-hint");
    if (state.hover) { state.hover.setAttribute("visibility", "hidden"); }
    if (state.labels) { cool(); }
  }
  function cool() {  // no row or column label marked as read
    state.labels.rows.concat(state.labels.columns).forEach(function (text) { text.classList.remove("rfp-hot"); });
  }
  function cellOf(event) {
    var t = event.target;
    return t && t.getAttribute && t.getAttribute("data-k") !== null ? t : null;
  }
  function pointAt(body) {
    body.addEventListener("pointerover", function (event) {
      var cell = cellOf(event);
      if (cell && state.shown) { read(Number(cell.getAttribute("data-q")), Number(cell.getAttribute("data-k"))); }
    });
    body.addEventListener("pointerleave", function (event) {
      if (event.pointerType === "mouse") { unread(); }  // a tap's reading stays until the next tap
    });
    body.addEventListener("click", function (event) {  // a tap reads the cell too: pointerover came first
      var cell = cellOf(event);
      if (!cell || !state.shown) { return; }
      var q = Number(cell.getAttribute("data-q")), k = Number(cell.getAttribute("data-k"));
      if (q !== state.row) { pick({row: q}); }
      read(q, k);
    });
  }

  function pick(change) {  // a new layer, head or row from any control: every control shows it
    for (var key in change) { state[key] = change[key]; }
    if (layerBox) { layerBox.value = String(state.layer); }
    if (headBox) { headBox.value = String(state.head); }
    if (rowBox) { rowBox.value = String(state.row); }
    if (state.result) { draw(); drawThumbs(); }
  }

  function build() {  // which weights these are: the export names its build
    var W = window.REVFORMER_WEIGHTS, steps = W.groups[group()] && W.groups[group()].steps;
    $(".rfp-build").textContent = say("build", {version: W.revformer,
      seed: W.seed === null ? "" : say("seed", {seed: W.seed}),
      steps: steps ? say("steps", {group: group(), steps: steps}) : ""});
  }

  function start() {
    var layers = [], rows = [];
    for (var l = 0; l < window.revformerModel.config(O.groups[0]).layers; l++) { layers.push(say("layer", {l: l})); }
    for (var q = 0; q < T; q++) { rows.push(String(q)); }
    fillSelect(layerBox, layers, layers.map(function (x, i) { return i; }), state.layer);
    fillSelect(rowBox, rows, rows, state.row);
    readout.classList.add("rfp-hint");
    syncGroup();
    if (maskBox) { noteMask(); }
    if (digitsBox) { digitsBox.addEventListener("input", update); }
    var random = $(".rfp-random");
    if (random) {
      random.addEventListener("click", function () {
        var text = "";
        for (var i = 0; i < 6; i++) { text += Math.floor(Math.random() * 10); }
        if (digitsBox) { digitsBox.value = text; } else { O.digits = text; state.digits = text.split("").map(Number); }
        update();
      });
    }
    if (groupBox) {
      groupBox.addEventListener("change", function () { syncGroup(); if (maskBox) { noteMask(); } build(); update(); });
    }
    build();
    if (maskBox) { maskBox.addEventListener("change", function () { noteMask(); update(); }); }
    $$("input.rfp-ko").forEach(function (box) { box.addEventListener("change", function () { syncAll(); update(); }); });
    $$("input.rfp-ko-all").forEach(function (all) {
      all.addEventListener("change", function () {
        $$('input.rfp-ko[data-layer="' + all.dataset.layer + '"]').forEach(function (b) { if (!b.disabled) { b.checked = all.checked; } });
        syncAll(); update();
      });
    });
    if (layerBox) { layerBox.addEventListener("change", function () { pick({layer: Number(layerBox.value)}); }); }
    if (headBox) { headBox.addEventListener("change", function () { pick({head: headBox.value}); }); }
    if (rowBox) { rowBox.addEventListener("change", function () { pick({row: Number(rowBox.value)}); }); }
    $$("button.rfp-thumb").forEach(function (button) {
      button.addEventListener("click", function () {
        pick({layer: Number(button.dataset.layer), head: button.dataset.head});
      });
    });
    pointAt($(".rfp-body"));
    update();
    root.dataset.firstDrawMs = (performance.now() - started).toFixed(1);  // for revformer.web.browser_timings
    root.dataset.drawnAtMs = performance.now().toFixed(1);  // since the page began to load
  }

  var tries = 0;
  (function wait() {  // in Jupyter or Colab the two scripts may still be loading
    if (window.revformerModel && window.REVFORMER_WEIGHTS) {
      try { start(); } catch (error) { fail(error.message); }
      return;
    }
    var missing = window.REVFORMER_MISSING || [];
    if (missing.length || ++tries > 600) {
      fail(say("notLoaded", {files: missing.length ? missing.join(O.text.and) :
           O.scripts + "revformer-weights.js" + O.text.and + O.scripts + "revformer-model.js"}));
      return;
    }
    setTimeout(wait, 50);
  })();
})();
