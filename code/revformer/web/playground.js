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
  var state = {group: O.groups[0], digits: O.digits.split("").map(Number), result: null};
  function fail(message) { alertBox.textContent = message; root.classList.add("rfp-stale"); }

  function group() { return groupBox ? groupBox.value : O.groups[0]; }
  function heads() { return window.revformerModel.config(group()).heads; }
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
  function syncGroup(first) {  // the head choices, the mask's default and the knockout boxes of this group
    var c = window.revformerModel.config(group()), labels = [], values = [];
    for (var h = 0; h < c.heads; h++) { labels.push(say("head", {h: h})); values.push(h); }
    labels.push(O.text.meanOfHeads); values.push("mean");
    fillSelect(headBox, labels, values, first ? O.head : (headBox ? headBox.value : "mean"));
    if (maskBox) { maskBox.checked = c.causal; }
    $$(".rfp-ko-head").forEach(function (span) {
      var absent = Number(span.dataset.head) >= c.heads, box = span.querySelector("input");
      span.classList.toggle("rfp-absent", absent);
      box.disabled = absent;
      if (absent) { box.checked = false; }
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
  }

  function percent(p) { return p > 0.9999 ? ">99.99%" : (100 * p).toFixed(p > 0.99 ? 2 : 1) + "%"; }
  function loss(v) { return v.toPrecision(3); }  // 0.000213 or 2.31: three significant digits

  function drawAnswer() {
    var r = state.result, want = r.digits.slice().reverse().concat([12]), wrong = [];
    r.answer.tokens.forEach(function (t, i) {
      var cell = $('td.rfp-tok[data-i="' + i + '"]'), right = t === want[i];
      cell.textContent = name(t);
      cell.classList.toggle("rfp-wrong", !right);
      $('td.rfp-prob[data-i="' + i + '"]').textContent = percent(r.answer.probabilities[i]) + (r.answer.forced[i] ? "*" : "");
      $('td.rfp-want[data-i="' + i + '"]').textContent = name(want[i]);
      if (!right) { wrong.push(8 + i); }
    });
    root.dataset.answer = r.answer.tokens.map(name).join(" ");
    var forced = r.answer.forced.indexOf(true) >= 0 ? O.text.forced : "";
    var words = {positions: wrong.join(O.text.comma), digits: r.digits.join(" "), want: want.map(name).join(" ")};
    $(".rfp-verdict").textContent = say(wrong.length ? (wrong.length > 1 ? "wrongMany" : "wrongOne") : "right", words) +
      forced;
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
      tr.querySelector(".rfp-loss-bar div").style.width = Math.round(Math.min(1, v / 5) * 130) + "px";
      sum += v; base += r.base[i];
    });
    var mean = $("tr.rfp-loss-mean");
    mean.querySelector(".rfp-loss-now").textContent = loss(sum / 7);
    mean.querySelector(".rfp-loss-base").textContent = loss(base / 7);
    root.dataset.loss = String(sum / 7);
  }

  function color(v) { return O.palette[Math.round(Math.max(0, Math.min(1, v)) * (O.palette.length - 1))]; }
  function draw() {  // the heatmap of one layer and head (or their mean), and the query row's bars
    var r = state.result, layer = layerBox ? Number(layerBox.value) : O.layer;
    var h = headBox ? headBox.value : O.head, row = rowBox ? Number(rowBox.value) : O.row;
    var W = r.attention[layer], H = W.length, M = [];
    if (h !== "mean" && Number(h) >= H) { h = "mean"; }
    for (var q = 0; q < T; q++) {
      M.push([]);
      for (var k = 0; k < T; k++) {
        var v = 0;
        if (h === "mean") { for (var j = 0; j < H; j++) { v += W[j][q][k]; } v /= H; } else { v = W[Number(h)][q][k]; }
        M[q].push(v);
      }
    }
    var toks = r.inputs, label = function (i) { return i + " " + name(toks[i]); };
    var next = row + 1 < T ? name(toks[row + 1]) : name(r.answer.tokens[6]);
    $(".rfp-note").textContent = say("note", {row: row, token: name(toks[row]), next: next});
    var body = $(".rfp-body");
    body.innerHTML = "";
    var c = 22, left = 64, top = 64;
    var svg = el("svg", {width: left + c * T + 8, height: top + c * T + 44, role: "img", "class": "rfp-heatmap",
      "aria-label": say(r.causal ? "heatmapOn" : "heatmapOff", {group: group(), layer: layer,
        head: h === "mean" ? O.text.meanOfHeads : say("head", {h: h})})}, undefined, true);
    var defs = el("defs", {}, undefined, true), pat = el("pattern", {id: ID + "-hatch", width: 5, height: 5,
      patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)"}, undefined, true);
    pat.appendChild(el("rect", {width: 5, height: 5, fill: "#f2f2f2"}, undefined, true));
    pat.appendChild(el("line", {x1: 0, y1: 0, x2: 0, y2: 5, stroke: "#b0b0b0", "stroke-width": 2}, undefined, true));
    defs.appendChild(pat); svg.appendChild(defs);
    for (var i = 0; i < T; i++) {
      svg.appendChild(el("text", {x: left - 4, y: top + c * i + c * 0.7, "text-anchor": "end", "font-size": 10,
        "font-weight": i === row ? "bold" : "normal"}, label(i), true));
      svg.appendChild(el("text", {x: 0, y: 0, "font-size": 10, transform: "translate(" + (left + c * i + c * 0.65) + "," +
        (top - 4) + ") rotate(-90)"}, label(i), true));
    }
    svg.appendChild(el("text", {x: left, y: 10, "font-size": 10}, O.text.keyAxis, true));
    for (q = 0; q < T; q++) {
      for (k = 0; k < T; k++) {
        var masked = r.causal && k > q;  // the future: -inf before the softmax, weight 0
        svg.appendChild(el("rect", {x: left + c * k, y: top + c * q, width: c, height: c, "class": "rfp-cell",
          fill: masked ? "url(#" + ID + "-hatch)" : color(M[q][k]), "data-q": q, "data-k": k,
          "data-value": M[q][k].toFixed(4)}, undefined, true));
      }
    }
    // the prompt/answer dividers: the answer queries start at row 7, the answer keys at column 8
    svg.appendChild(el("line", {x1: left, x2: left + c * T, y1: top + c * 7, y2: top + c * 7, stroke: "#ffffff",
      "stroke-width": 2}, undefined, true));
    svg.appendChild(el("line", {x1: left + c * 8, x2: left + c * 8, y1: top, y2: top + c * T, stroke: "#ffffff",
      "stroke-width": 2, "stroke-dasharray": "4 3"}, undefined, true));
    for (q = 7; q <= 12; q++) {  // the reversal cells: answer query q reads the prompt digit at 13 - q
      svg.appendChild(el("rect", {x: left + c * (13 - q) + 1, y: top + c * q + 1, width: c - 2, height: c - 2, fill: "none",
        stroke: "#ff3b30", "stroke-width": 2, "class": "rfp-expected"}, undefined, true));
    }
    svg.appendChild(el("rect", {x: left - 1, y: top + c * row, width: c * T + 2, height: c, fill: "none",
      stroke: "#e6007e", "stroke-width": 2.5}, undefined, true));
    var steps = 28, cw = c * T / steps, by = top + c * T + 10;
    for (var b = 0; b < steps; b++) {
      svg.appendChild(el("rect", {x: left + b * cw, y: by, width: cw + 0.5, height: 10, fill: color((b + 0.5) / steps)},
        undefined, true));
    }
    ["0", "0.5", "1"].forEach(function (text, n) {
      svg.appendChild(el("text", {x: left + n * c * T / 2, y: by + 22, "font-size": 10,
        "text-anchor": ["start", "middle", "end"][n]}, text, true));
    });
    svg.appendChild(el("text", {x: left + c * T / 2, y: by + 33, "font-size": 10, "text-anchor": "middle"},
      O.text.weight, true));
    body.appendChild(svg);
    var table = el("table", {"class": "rfp-bars"});
    table.appendChild(el("caption", {}, say("bars", {row: row})));
    for (k = 0; k < T; k++) {
      var tr = el("tr", {"class": row >= 7 && row <= 12 && k === 13 - row ? "rfp-expected" : ""});
      tr.appendChild(el("td", {}, label(k)));
      var cell = el("td", {style: "width:160px"});
      cell.appendChild(el("div", {"class": "rfp-bar", style: "width:" + Math.round(Math.min(1, M[row][k]) * 150) + "px"}));
      tr.appendChild(cell);
      tr.appendChild(el("td", {"class": "rfp-value", "data-k": k}, r.causal && k > row ? O.text.masked : M[row][k].toFixed(3)));
      table.appendChild(tr);
    }
    body.appendChild(table);
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
    fillSelect(layerBox, layers, layers.map(function (x, i) { return i; }), O.layer);
    fillSelect(rowBox, rows, rows, O.row);
    syncGroup(true);
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
      groupBox.addEventListener("change", function () { syncGroup(false); if (maskBox) { noteMask(); } build(); update(); });
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
    [layerBox, headBox, rowBox].forEach(function (box) {
      if (box) { box.addEventListener("change", function () { if (state.result) { draw(); } }); }
    });
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
