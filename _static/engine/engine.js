/* The engine both live pages compute with (book/pronouncer_live.md,
 * book/gpt_live.md): plain JavaScript, no framework, no WebAssembly,
 * nothing from outside the site. Each page's script keeps only its own
 * model's wiring (_static/pronouncer/pronouncer.js: utils.model.Transformer;
 * _static/gpt/gpt.js: utils.gpt.GPT) and its widget; what both compute the
 * same way is here, once:
 *
 * - the export (weights.js, made by tools/editions/live_export.py for either model):
 *   checkExport refuses another format or version, a missing or unknown
 *   architecture field and a setting the page does not compute;
 *   checkTensors any missing, extra or misshapen tensor and a short fp16;
 *   loadTensors decodes the checkpoint's fp16 numbers to float32, exactly;
 * - the layers on rows of an (n, width) Float32Array: linear (nn.Linear),
 *   layerNorm (nn.LayerNorm: biased variance, eps in the root), ffn
 *   (utils.layers.FeedForward, ReLU), softmax, logSoftmax, attention and
 *   one cached self-attention step, with ONE precision rule: every vector
 *   is float32, as PyTorch keeps it; a sum runs in double and is rounded
 *   to float32 once, where PyTorch stores its result (a score q.k is
 *   rounded, then divided by sqrt(dh) and rounded, as q @ k^T / sqrt(dh);
 *   softmax takes exp(x - max) and its sum in double and rounds each
 *   weight).
 *
 * Under Node (the tests), require() gives it; in the page it is
 * window.CourseEngine.
 */
(function () {
  "use strict";

  // ---------- the export: checked before anything is computed ----------

  class ExportError extends Error {}

  function refuse(message) {
    throw new ExportError(message);
  }

  const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
  const isInt = (v, min) => Number.isInteger(v) && v >= min;
  const isPositive = (v) => typeof v === "number" && Number.isFinite(v) && v > 0;
  const isBool = (v) => typeof v === "boolean";
  const size = (shape) => shape.reduce((a, b) => a * b, 1);

  // spec: field -> [test, what it must be]; a missing field, a failed test
  // and any field the spec lacks (a newer exporter's setting this page
  // would silently ignore) are refused
  function checkFields(obj, spec, where) {
    for (const key of Object.keys(spec)) {
      if (!(key in obj)) refuse(`the export lacks ${where}.${key}`);
      const [ok, want] = spec[key];
      if (!ok(obj[key])) {
        refuse(`${where}.${key} must be ${want}, got ${JSON.stringify(obj[key])}`);
      }
    }
    for (const key of Object.keys(obj)) {
      if (!(key in spec)) refuse(`${where}.${key} is a setting this page does not know`);
    }
  }

  // the export's header and architecture; spec: {name, global, format,
  // version, tool, architecture (checkFields' spec)}. Returns the
  // architecture.
  function checkExport(data, spec) {
    if (!isObject(data)) refuse(`the weights file holds no export (${spec.global} is missing)`);
    if (data.format !== spec.format) {
      refuse(`not a ${spec.name} export: format ${JSON.stringify(data.format)}, expected "${spec.format}"`);
    }
    if (data.format_version !== spec.version) {
      refuse(
        `export format version ${JSON.stringify(data.format_version)}: this page reads ` +
          `version ${spec.version} only (rebuild it: python -m ${spec.tool})`,
      );
    }
    const a = data.architecture;
    if (!isObject(a)) refuse("the export lacks architecture (an object)");
    checkFields(a, spec.architecture, "architecture");
    if (a.d_model % a.num_heads) {
      refuse(`architecture.d_model (${a.d_model}) must be a multiple of num_heads (${a.num_heads})`);
    }
    return a;
  }

  // name -> shape of the course's layers (utils.layers) with width d
  function shapes(d, attentionBias) {
    const want = {};
    const linear = (p, dOut, dIn, bias = true) => {
      want[p + ".weight"] = [dOut, dIn];
      if (bias) want[p + ".bias"] = [dOut];
    };
    return {
      want,
      linear,
      table: (p, rows) => (want[p] = [rows, d]),
      norm: (p) => {
        want[p + ".weight"] = [d];
        want[p + ".bias"] = [d];
      },
      attention: (p) => ["w_q", "w_k", "w_v", "w_o"].forEach((w) => linear(`${p}.${w}`, d, d, attentionBias)),
      ffn: (p, dff) => {
        linear(p + ".w_1", dff, d);
        linear(p + ".w_2", d, dff);
      },
    };
  }

  // data.tensors ([name, shape, offset] into fp16) against `want` (name ->
  // shape): every tensor there, none else, each of its shape, inside fp16
  function checkTensors(data, want) {
    if (!Array.isArray(data.tensors)) refuse("the export lacks tensors (a list)");
    if (typeof data.fp16 !== "string") refuse("the export lacks fp16 (base64 text)");
    const seen = new Set();
    let total = 0;
    for (const entry of data.tensors) {
      if (!Array.isArray(entry) || entry.length !== 3 || !Array.isArray(entry[1])) {
        refuse(`a tensors entry is not [name, shape, offset]: ${JSON.stringify(entry)}`);
      }
      const [name, shape, offset] = entry;
      if (!(name in want)) refuse(`tensor ${name} is not part of the model this page computes`);
      if (seen.has(name)) refuse(`tensor ${name} appears twice`);
      seen.add(name);
      if (JSON.stringify(shape) !== JSON.stringify(want[name])) {
        refuse(`tensor ${name} has shape ${JSON.stringify(shape)}, expected ${JSON.stringify(want[name])}`);
      }
      if (!isInt(offset, 0)) refuse(`tensor ${name} has offset ${JSON.stringify(offset)}`);
      total = Math.max(total, offset + size(shape));
    }
    const missing = Object.keys(want).filter((name) => !seen.has(name));
    if (missing.length) {
      const more = missing.length > 3 ? ", …" : "";
      refuse(`the export lacks tensor${missing.length > 1 ? "s" : ""} ${missing.slice(0, 3).join(", ")}${more}`);
    }
    // base64: 4 characters per 3 bytes, "=" padding at the end
    const bytes = (data.fp16.length / 4) * 3 - data.fp16.match(/=*$/)[0].length;
    if (bytes < 2 * total) refuse(`fp16 holds ${bytes} bytes, the tensors need ${2 * total}`);
  }

  // ---------- the weights: base64 fp16 -> Float32Array per tensor ----------

  function halfToFloat(bits) {
    const sign = bits & 0x8000 ? -1 : 1;
    const exp = (bits >> 10) & 0x1f;
    const frac = bits & 0x3ff;
    if (exp === 0) return sign * frac * Math.pow(2, -24); // subnormal
    if (exp === 31) return frac ? NaN : sign * Infinity;
    return sign * (1 + frac / 1024) * Math.pow(2, exp - 15);
  }

  function loadTensors(data) {
    let raw;
    try {
      raw = atob(data.fp16);
    } catch (err) {
      refuse("fp16 is not base64 text");
    }
    const table = new Float32Array(65536); // every half, decoded once
    for (let b = 0; b < 65536; b++) table[b] = halfToFloat(b);
    const weights = {};
    for (const [name, shape, offset] of data.tensors) {
      const out = new Float32Array(size(shape)); // row-major, as in PyTorch
      for (let i = 0; i < out.length; i++) {
        const j = 2 * (offset + i); // little-endian halves
        out[i] = table[raw.charCodeAt(j) | (raw.charCodeAt(j + 1) << 8)];
      }
      weights[name] = out;
    }
    return weights;
  }

  // ---------- the layers, on rows of an (n, width) Float32Array ----------

  // nn.Linear: x (n, dIn) -> x W^T + b (n, dOut); W (dOut, dIn); b may be
  // absent (no bias)
  function linear(x, n, W, b, dIn, dOut) {
    const y = new Float32Array(n * dOut);
    const main = dIn - (dIn % 4);
    for (let r = 0; r < n; r++) {
      const xo = r * dIn;
      for (let o = 0; o < dOut; o++) {
        const wo = o * dIn;
        // four partial sums: a faster loop; the rest (dIn % 4) after them
        let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        for (let i = 0; i < main; i += 4) {
          s0 += x[xo + i] * W[wo + i];
          s1 += x[xo + i + 1] * W[wo + i + 1];
          s2 += x[xo + i + 2] * W[wo + i + 2];
          s3 += x[xo + i + 3] * W[wo + i + 3];
        }
        let tail = 0;
        for (let i = main; i < dIn; i++) tail += x[xo + i] * W[wo + i];
        y[r * dOut + o] = (b ? b[o] : 0) + (s0 + s1) + (s2 + s3) + tail;
      }
    }
    return y;
  }

  // the nn.Linear called `name` in the weights W (its .weight and .bias)
  function dense(W, name, x, n, dIn, dOut = dIn) {
    return linear(x, n, W[name + ".weight"], W[name + ".bias"], dIn, dOut);
  }

  // x + y, elementwise (a residual connection)
  function add(x, y) {
    const out = new Float32Array(x.length);
    for (let i = 0; i < x.length; i++) out[i] = x[i] + y[i];
    return out;
  }

  // nn.LayerNorm(d) row by row: biased variance, eps in the root
  function layerNorm(x, n, d, g, b, eps) {
    const out = new Float32Array(n * d);
    for (let r = 0; r < n; r++) {
      let mean = 0;
      for (let i = 0; i < d; i++) mean += x[r * d + i];
      mean /= d;
      let v = 0;
      for (let i = 0; i < d; i++) v += (x[r * d + i] - mean) * (x[r * d + i] - mean);
      const inv = 1 / Math.sqrt(v / d + eps);
      for (let i = 0; i < d; i++) {
        out[r * d + i] = (x[r * d + i] - mean) * inv * g[i] + b[i];
      }
    }
    return out;
  }

  // the LayerNorm called `name` in the weights W
  function norm(W, name, x, n, d, eps) {
    return layerNorm(x, n, d, W[name + ".weight"], W[name + ".bias"], eps);
  }

  // FeedForward `p`: w_2(relu(w_1 x)), (n, d) -> (n, d_ff) -> (n, d)
  function ffn(W, p, x, n, d, dff) {
    const hid = dense(W, p + "w_1", x, n, d, dff);
    for (let i = 0; i < hid.length; i++) if (hid[i] < 0) hid[i] = 0;
    return dense(W, p + "w_2", hid, n, dff, d);
  }

  // softmax of x[0 .. n) into out[at .. at + n): exp(x - max) and their sum
  // in double, each weight rounded to float32
  function softmax(x, n = x.length, out = new Float32Array(n), at = 0) {
    let max = -Infinity;
    for (let i = 0; i < n; i++) if (x[i] > max) max = x[i];
    let sum = 0;
    for (let i = 0; i < n; i++) sum += Math.exp(x[i] - max);
    for (let i = 0; i < n; i++) out[at + i] = Math.exp(x[i] - max) / sum;
    return out;
  }

  // log-softmax: x - max - log(sum(exp(x - max))), in float32
  function logSoftmax(x) {
    let max = -Infinity;
    for (const v of x) if (v > max) max = v;
    let sum = 0;
    for (const v of x) sum += Math.exp(v - max);
    const lse = Math.fround(max + Math.log(sum));
    return x.map((v) => v - lse);
  }

  // softmax(logits) and the `n` most likely ids, largest first (equal:
  // lower id first): [{id, p}]
  function topTokens(logits, n) {
    const p = softmax(logits);
    const ids = Array.from({ length: logits.length }, (_, i) => i);
    ids.sort((a, b) => (logits[b] - logits[a]) || (a - b));
    return ids.slice(0, n).map((id) => ({ id, p: p[id] }));
  }

  // softmax(q k^T / sqrt(dh)) v for each head; q (nq, d), k and v (nk, d)
  // (their first nk rows; head j = columns j*dh .. (j+1)*dh). causal: query
  // r sees keys <= r + (nk - nq). Returns out (nq, d) and weights[head]
  // (nq, nk).
  function attention(q, k, v, nq, nk, d, h, causal) {
    const dh = d / h;
    const scale = Math.sqrt(dh);
    const out = new Float32Array(nq * d);
    const weights = [];
    const row = new Float64Array(nk);
    for (let j = 0; j < h; j++) {
      const w = new Float32Array(nq * nk);
      for (let r = 0; r < nq; r++) {
        const seen = causal ? r + nk - nq + 1 : nk;
        for (let c = 0; c < seen; c++) {
          let s = 0;
          for (let i = 0; i < dh; i++) s += q[r * d + j * dh + i] * k[c * d + j * dh + i];
          row[c] = Math.fround(Math.fround(s) / scale);
        }
        softmax(row, seen, w, r * nk);
        for (let i = 0; i < dh; i++) {
          let s = 0;
          for (let c = 0; c < seen; c++) s += w[r * nk + c] * v[c * d + j * dh + i];
          out[r * d + j * dh + i] = s;
        }
      }
      weights.push(w);
    }
    return { out, weights };
  }

  // The masked self-attention `p` (utils.attention.MultiHeadAttention) of
  // one new position t: its key and value (from y, (1, d)) go into the KV
  // cache c = {k, v} at row t, and its query sees rows 0 .. t. A cache with
  // no room for row t grows to exactly t + 1 rows, a copy: caches that share
  // their arrays (beam search's) never write into each other's. Returns
  // out (1, d) after w_o and the weights [head] (t + 1).
  function selfAttentionStep(W, p, y, c, t, d, h) {
    const q = dense(W, p + "w_q", y, 1, d);
    for (const [name, w] of [["k", "w_k"], ["v", "w_v"]]) {
      if (c[name].length < (t + 1) * d) {
        const grown = new Float32Array((t + 1) * d);
        grown.set(c[name].subarray(0, t * d));
        c[name] = grown;
      }
      c[name].set(dense(W, p + w, y, 1, d), t * d);
    }
    const a = attention(q, c.k, c.v, 1, t + 1, d, h, false);
    return { out: dense(W, p + "w_o", a.out, 1, d), weights: a.weights };
  }

  const api = {
    ExportError, refuse, isObject, isInt, isPositive, isBool, checkFields, checkExport, shapes,
    checkTensors, loadTensors, linear, dense, add, layerNorm, norm, ffn, softmax, logSoftmax,
    topTokens, attention, selfAttentionStep,
  };
  if (typeof module === "object" && module.exports) module.exports = api;
  if (typeof window !== "undefined") window.CourseEngine = api;
})();
