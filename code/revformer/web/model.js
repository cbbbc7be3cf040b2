/* revformer/web/model.js: the forward pass of revformer/model.py, in plain JavaScript.
 *
 * It runs the trained weights that `python -m revformer web` exports into
 * revformer-weights.js (window.REVFORMER_WEIGHTS, one entry per group). A plain
 * script, no modules and no library, so a page loads it with <script src>, even
 * from file://. Every number is a JavaScript double (Float64) computed from the
 * float32 weights; PyTorch computes in float32, so the logits agree to about
 * 1e-5, not bit for bit.
 *
 * Shapes as in the book: T positions, D model width, H heads, Dh = D / H. An
 * activation [T,D] is an array of T rows, each a Float64Array of D numbers.
 */
(function () {
  "use strict";
  if (window.revformerModel) { return; }  // a page may load this file more than once

  var BOS = 10, SEP = 11, EOS = 12, DIGITS = 6, PROMPT_LEN = 8, STEPS = 7;
  var has = Object.prototype.hasOwnProperty;

  function show(value) {  // a value as an error message quotes it
    if (Array.isArray(value)) { return "[" + value.map(show).join(", ") + "]"; }
    if (typeof value === "string" || (value && typeof value === "object")) {
      return JSON.stringify(value);
    }
    return String(value);
  }

  // ---- the weights -------------------------------------------------------

  // One tensor of revformer-weights.js: float32, little-endian, in base64.
  function decode(tensor, name, shape) {
    if (!tensor || String(tensor.shape) !== String(shape)) {
      throw new Error("revformer-weights.js: " + name + " should have shape [" + shape +
                      "], has " + (tensor ? "[" + tensor.shape + "]" : "none"));
    }
    var bytes = atob(tensor.data), view = new DataView(new ArrayBuffer(bytes.length));
    for (var i = 0; i < bytes.length; i++) { view.setUint8(i, bytes.charCodeAt(i)); }
    var values = new Float64Array(bytes.length / 4);
    for (var j = 0; j < values.length; j++) {
      values[j] = view.getFloat32(4 * j, true);
    }
    return values;
  }

  var models = {};  // decoded once per group, on first use
  function load(group) {
    var all = window.REVFORMER_WEIGHTS;
    if (!all || !all.groups) {
      throw new Error("the weights are not loaded: " +
                      "load revformer-weights.js before calling revformerModel");
    }
    if (typeof group !== "string" || !has.call(all.groups, group)) {
      throw new Error("unknown group " + show(group) + ": expected one of " +
                      Object.keys(all.groups).join(", "));
    }
    if (models[group]) { return models[group]; }
    var c = all.groups[group].config, stored = all.groups[group].tensors;
    function tensor(name, shape) {
      return decode(stored[name], group + " " + name, shape);
    }
    function linearParams(name, out, inp) {
      return {w: tensor(name + ".weight", [out, inp]), b: tensor(name + ".bias", [out]),
              out: out, inp: inp};
    }
    function normParams(name) {
      return {w: tensor(name + ".weight", [c.d_model]),
              b: tensor(name + ".bias", [c.d_model])};
    }
    var D = c.d_model, blocks = [];
    for (var l = 0; l < c.layers; l++) {
      var p = "blocks." + l + ".";
      blocks.push({
        norm1: normParams(p + "norm1"), norm2: normParams(p + "norm2"),
        q: linearParams(p + "attention.q_proj", D, D),
        k: linearParams(p + "attention.k_proj", D, D),
        v: linearParams(p + "attention.v_proj", D, D),
        out: linearParams(p + "attention.out_proj", D, D),
        fc1: linearParams(p + "ffn.fc1", c.d_ff, D),
        fc2: linearParams(p + "ffn.fc2", D, c.d_ff)
      });
    }
    models[group] = {
      config: c, blocks: blocks,
      tokens: tensor("token_embedding.weight", [c.vocab, D]),
      positions: tensor("position_embedding.weight", [c.positions, D]),
      finalNorm: normParams("final_norm"), head: linearParams("lm_head", c.vocab, D)
    };
    return models[group];
  }

  // ---- the layers ------------------------------------------------------

  // nn.Linear: y = x W^T + b, row by row. The weight is stored [out, in]: row o
  // holds the weights of output o, so output o is b[o] + (row o of W) . x.
  function linear(x, p) {
    var w = p.w, b = p.b, n = p.inp;
    return x.map(function (row) {
      var y = new Float64Array(p.out);
      for (var o = 0; o < y.length; o++) {
        var sum = b[o], at = o * n;
        for (var i = 0; i < n; i++) { sum += w[at + i] * row[i]; }
        y[o] = sum;
      }
      return y;
    });
  }

  // nn.LayerNorm over the D features of each row:
  // (x - mean) / sqrt(variance + 1e-5), then times the weight plus the bias.
  // The variance divides by D (biased), as PyTorch's.
  function layerNorm(x, p) {
    return x.map(function (row) {
      var n = row.length, mean = 0, variance = 0, y = new Float64Array(n);
      for (var i = 0; i < n; i++) { mean += row[i]; }
      mean /= n;
      for (i = 0; i < n; i++) { variance += (row[i] - mean) * (row[i] - mean); }
      var scale = 1 / Math.sqrt(variance / n + 1e-5);
      for (i = 0; i < n; i++) { y[i] = (row[i] - mean) * scale * p.w[i] + p.b[i]; }
      return y;
    });
  }

  function add(x, y) {  // the residual: x + y, row by row
    return x.map(function (row, t) {
      return row.map(function (v, i) { return v + y[t][i]; });
    });
  }

  // erf to about 1e-15, for the exact GELU (nn.GELU's default is not the tanh
  // approximation). |x| < 2: the Taylor series 2/sqrt(pi) sum (-1)^n x^(2n+1)
  // / (n! (2n+1)), about 30 terms. Beyond, erfc(x) = exp(-x^2)/sqrt(pi) /
  // (x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))), a continued fraction evaluated
  // from depth 40 up. |x| >= 6: erf is +-1 to double precision.
  function erf(x) {
    var a = Math.abs(x), sign = x < 0 ? -1 : 1;
    if (a < 2) {
      var term = x, sum = x;
      for (var n = 1; n < 40 && Math.abs(term) > 1e-17 * Math.abs(sum); n++) {
        term *= -x * x / n;
        sum += term / (2 * n + 1);
      }
      return sum * 2 / Math.sqrt(Math.PI);
    }
    if (a >= 6) { return sign; }
    var fraction = a;
    for (var k = 40; k > 0; k--) { fraction = a + (k / 2) / fraction; }
    return sign * (1 - Math.exp(-a * a) / Math.sqrt(Math.PI) / fraction);
  }

  function gelu(x) { return 0.5 * x * (1 + erf(x / Math.SQRT2)); }

  // MultiHeadSelfAttention.forward. x holds the rows entering the layer; queries
  // come from rows first.. only (Python's queries_from), keys and values from every
  // row and, with a cache (see generate), from the earlier positions it keeps.
  // Returns the output of rows first.. and the weights [H][those rows][keys].
  function attention(x, p, heads, causal, silenced, first, cache) {
    var q = linear(x.slice(first), p.q), k = linear(x, p.k), v = linear(x, p.v);
    if (cache) { k = cache.k = cache.k.concat(k); v = cache.v = cache.v.concat(v); }
    // start: the position of query row 0
    var T = k.length, start = T - x.length + first;
    var Dh = q[0].length / heads, weights = [];
    // heads side by side
    var merged = q.map(function () { return new Float64Array(heads * Dh); });
    for (var h = 0; h < heads; h++) {
      // head h owns the slice lo..lo+Dh-1 of each projection
      var lo = h * Dh, rows = [];
      for (var i = 0; i < q.length; i++) {
        var scores = new Float64Array(T), max = -Infinity, total = 0,
            qi = q[i], out = merged[i];
        for (var j = 0; j < T; j++) {
          var dot = 0, kj = k[j];
          for (var d = lo; d < lo + Dh; d++) { dot += qi[d] * kj[d]; }
          // -inf before the softmax: the future key gets weight exp(-inf) = 0
          // and the visible keys still sum to 1. The diagonal (j = start + i)
          // stays visible.
          scores[j] = causal && j > start + i ? -Infinity : dot / Math.sqrt(Dh);
          max = Math.max(max, scores[j]);
        }
        for (j = 0; j < T; j++) {
          scores[j] = Math.exp(scores[j] - max);
          total += scores[j];
        }
        for (j = 0; j < T; j++) { scores[j] /= total; }  // the row sums to 1
        rows.push(scores);
        // knocked out: its output stays 0 before out_proj
        if (silenced[h]) { continue; }
        for (j = 0; j < T; j++) {
          for (d = lo; d < lo + Dh; d++) { out[d] += scores[j] * v[j][d]; }
        }
      }
      weights.push(rows);
    }
    return {out: linear(merged, p.out), weights: weights};
  }

  // TransformerBlock.forward, Pre-LN: u = x + Attn(LN1(x)); out = u + FFN(LN2(u)).
  function block(x, b, heads, causal, silenced, first, cache) {
    var a = attention(layerNorm(x, b.norm1), b, heads, causal, silenced, first, cache);
    var u = add(x.slice(first), a.out);
    var hidden = linear(layerNorm(u, b.norm2), b.fc1).map(function (row) {
      return row.map(gelu);
    });
    return {x: add(u, linear(hidden, b.fc2)), weights: a.weights};
  }

  // ReversalTransformer.forward: ids [T] -> logits of positions logitsFrom..T-1
  // and the weights of every layer. Only the last block may skip rows: the rows
  // of the earlier blocks are the keys and values of the next one. With caches
  // (one per layer) the positions they already hold are not computed again.
  function run(m, ids, causal, silenced, logitsFrom, caches) {
    var D = m.config.d_model, L = m.blocks.length,
        done = caches ? caches[0].k.length : 0, weights = [];
    // token embedding + position embedding
    var x = ids.slice(done).map(function (id, t) {
      var row = new Float64Array(D);
      for (var i = 0; i < D; i++) {
        row[i] = m.tokens[id * D + i] + m.positions[(done + t) * D + i];
      }
      return row;
    });
    for (var l = 0; l < L; l++) {
      var out = block(x, m.blocks[l], m.config.heads, causal, silenced[l],
                      l === L - 1 ? logitsFrom - done : 0, caches && caches[l]);
      x = out.x;
      weights.push(out.weights);
    }
    return {logits: linear(layerNorm(x, m.finalNorm), m.head), attention: weights};
  }

  // ---- checking what the caller gives ------------------------------------
  // -> the mask to use and, per layer, which heads are silenced
  function settings(m, options) {
    var c = m.config, opts = options === undefined || options === null ? {} : options;
    if (typeof opts !== "object" || Array.isArray(opts)) {
      throw new Error("options must be an object {causal, knockout}, got " +
                      show(options));
    }
    Object.keys(opts).forEach(function (key) {
      if (key !== "causal" && key !== "knockout") {
        throw new Error("unknown option " + show(key) +
                        ": expected causal or knockout");
      }
    });
    var causal = opts.causal === undefined || opts.causal === null ?
        c.causal : opts.causal;
    if (typeof causal !== "boolean") {
      throw new Error(
        "causal must be true, false or null (the group's own setting), got " +
        show(opts.causal));
    }
    var silenced = m.blocks.map(function () { return new Array(c.heads).fill(false); });
    var knockout = opts.knockout === undefined || opts.knockout === null ?
        [] : opts.knockout;
    if (!Array.isArray(knockout)) {
      throw new Error("knockout must be an array of [layer, head] pairs, got " +
                      show(knockout));
    }
    knockout.forEach(function (pair) {
      if (!Array.isArray(pair) || pair.length !== 2 || !pair.every(Number.isInteger)) {
        throw new Error("knockout takes [layer, head] pairs of integers, got " +
                        show(pair));
      }
      if (!(pair[0] >= 0 && pair[0] < c.layers && pair[1] >= 0 && pair[1] < c.heads)) {
        throw new Error("cannot knock out " + show(pair) + ": the model has layers 0-" +
                        (c.layers - 1) + " and heads 0-" + (c.heads - 1));
      }
      silenced[pair[0]][pair[1]] = true;
    });
    return {causal: causal, silenced: silenced};
  }

  function checkTokens(m, tokens) {
    var c = m.config;
    if (!Array.isArray(tokens) || tokens.length === 0) {
      throw new Error("tokens must be a non-empty array of token ids 0-" +
                      (c.vocab - 1) + ", got " + show(tokens));
    }
    if (tokens.length > c.positions) {
      throw new Error(tokens.length +
                      " tokens is too many: the position table holds at most " +
                      c.positions);
    }
    tokens.forEach(function (t, i) {
      if (!Number.isInteger(t) || t < 0 || t >= c.vocab) {
        throw new Error("token " + i + " is " + show(t) +
                        ", out of range: token ids are integers 0-" + (c.vocab - 1));
      }
    });
  }

  function prompt(digits) {  // six digits -> BOS d0..d5 SEP, as revformer.data.encode
    if (!Array.isArray(digits) || digits.length !== DIGITS) {
      throw new Error("expected six digits 0-9 (an array of 6 integers), got " +
                      show(digits));
    }
    digits.forEach(function (d, i) {
      if (!Number.isInteger(d) || d < 0 || d > 9) {
        throw new Error("digit " + i + " must be an integer 0-9, got " + show(d));
      }
    });
    return [BOS].concat(digits, [SEP]);
  }

  function softmax(row) {  // exp(s - max) / sum, as softmax_over_keys
    var max = Math.max.apply(null, row),
        e = Array.from(row, function (s) { return Math.exp(s - max); });
    var total = e.reduce(function (a, b) { return a + b; }, 0);
    return e.map(function (v) { return v / total; });
  }

  // ---- what a page calls -------------------------------------------------
  function forward(group, tokens, options) {
    var m = load(group), s = settings(m, options);
    checkTokens(m, tokens);
    var out = run(m, tokens, s.causal, s.silenced, 0);
    return {
      logits: out.logits.map(function (row) { return Array.from(row); }),  // [T][13]
      attention: out.attention.map(function (layer) {  // [L][H][T][T]
        return layer.map(function (head) {
          return head.map(function (row) { return Array.from(row); });
        });
      })
    };
  }

  // revformer.generate.generate for one prompt: seven steps over the growing
  // sequence, each taking the largest logit of the last position (the first
  // one on a tie, as argmax); once EOS is out, every later token is EOS.
  function generateWithProbabilities(group, digits, options) {
    var m = load(group), s = settings(m, options), tokens = prompt(digits);
    var out = {tokens: [], probabilities: [], forced: []}, finished = false;
    // Python recomputes every position at every step. With the mask no row reads a
    // later one, so the rows of the earlier positions never change: each layer keeps
    // their keys and values (a KV cache) and a step computes the new position alone:
    // the same numbers from 8 + 6 = 14 position rows per layer instead of 8 + ... + 14
    // = 77. Without the mask every row reads the new token, so every step recomputes
    // them all, as Python does.
    var caches = s.causal ? m.blocks.map(function () { return {k: [], v: []}; }) : null;
    for (var step = 0; step < STEPS; step++) {
      // only the last row's logits are read, so the last block computes that row
      // alone (Python's logits_from); every earlier row is still a key and a value
      var logits = run(m, tokens, s.causal, s.silenced, tokens.length - 1,
                       caches).logits[0];
      var next = 0;
      for (var i = 1; i < logits.length; i++) {
        if (logits[i] > logits[next]) { next = i; }
      }
      if (finished) { next = EOS; }
      out.tokens.push(next);
      // the model's probability of that token
      out.probabilities.push(softmax(logits)[next]);
      out.forced.push(finished);
      finished = finished || next === EOS;
      tokens = tokens.concat([next]);
    }
    return out;
  }

  function generate(group, digits, options) {
    return generateWithProbabilities(group, digits, options).tokens;
  }

  // The cross-entropy of the true next token at positions 7-13, the inputs
  // teacher-forced on the true answer (revformer.train.answer_loss, per position).
  function answerLoss(group, digits, options) {
    var m = load(group), s = settings(m, options),
        full = prompt(digits).concat(digits.slice().reverse(), [EOS]);
    var rows = run(m, full.slice(0, -1), s.causal, s.silenced, PROMPT_LEN - 1).logits;
    // -log softmax = log sum exp(s - max) + max - s[target]
    return rows.map(function (row, i) {
      var max = Math.max.apply(null, row), total = 0;
      for (var j = 0; j < row.length; j++) { total += Math.exp(row[j] - max); }
      return Math.log(total) + max - row[full[PROMPT_LEN + i]];
    });
  }

  window.revformerModel = {
    forward: forward, generate: generate,
    generateWithProbabilities: generateWithProbabilities,
    answerLoss: answerLoss, erf: erf, gelu: gelu,
    groups: function () {
      return window.REVFORMER_WEIGHTS ?
        Object.keys(window.REVFORMER_WEIGHTS.groups) : [];
    },
    config: function (group) { return JSON.parse(JSON.stringify(load(group).config)); }
  };
})();
