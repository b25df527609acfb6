/* The course's stored pronouncer (chapter 8), run in the page in plain
 * JavaScript: no framework, no WebAssembly, nothing from outside the site.
 *
 * The model is utils.model.Transformer, written out here in the same order:
 * embeddings (scaled) + sinusoidal positions, encoder, decoder (masked
 * self-attention with a KV cache, cross-attention, FFN), generator,
 * log-softmax; then greedy decoding and beam search with the rules of
 * utils.decoding. Its architecture is read from the export (weights.js,
 * made by tools/export_pronouncer.py, format FORMAT version
 * FORMAT_VERSION): sizes, layer counts, Post-Norm (LN(x + F(x))) or
 * Pre-Norm (x + F(LN(x)), then a final LayerNorm after each stack),
 * LayerNorm eps, embedding scale, positions. checkExport refuses any other
 * version, a missing or unknown field, a setting this script does not
 * compute, and any missing, extra or misshapen tensor, with a message the
 * page shows. Every vector is a Float32Array; the weights are the
 * checkpoint's fp16 numbers decoded to float32 (weights.js is loaded by a
 * <script> tag only when the reader presses the button, so it also works
 * from file://). One word at a time: batch size 1, so no padding masks.
 * Shapes in comments: S source positions (letters + EOS), t decoder
 * positions so far, d = d_model, h heads, dh = d / h, V phonemes.
 *
 * Under Node (the tests), require() gives { Pronouncer, checkExport,
 * ExportError, FORMAT, FORMAT_VERSION } and no widget is set up.
 */
(function () {
  "use strict";

  const FORMAT = "course-pronouncer";
  const FORMAT_VERSION = 2;
  const IN_PAGE = typeof document !== "undefined";
  const HERE = IN_PAGE && document.currentScript
    ? document.currentScript.src.replace(/[^/]*$/, "")
    : "";

  // ---------- the export: checked before anything is computed ----------

  class ExportError extends Error {}

  function refuse(message) {
    throw new ExportError(message);
  }

  const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
  const isInt = (v, min) => Number.isInteger(v) && v >= min;
  const isPositive = (v) => typeof v === "number" && Number.isFinite(v) && v > 0;

  // the fields of `architecture` this script computes, each with its test
  // and what it must be; any other field is refused (a newer exporter's
  // setting this script would silently ignore)
  const ARCHITECTURE = {
    model: [(v) => v === "encoder-decoder", '"encoder-decoder"'],
    d_model: [(v) => isInt(v, 2) && v % 2 === 0, "an even int >= 2 (sin/cos pairs)"],
    num_heads: [(v) => isInt(v, 1), "an int >= 1"],
    num_encoder_layers: [(v) => isInt(v, 1), "an int >= 1"],
    num_decoder_layers: [(v) => isInt(v, 1), "an int >= 1"],
    d_ff: [(v) => isInt(v, 1), "an int >= 1"],
    activation: [(v) => v === "relu", '"relu"'],
    norm: [(v) => v === "post" || v === "pre", '"post" or "pre"'],
    final_norm: [(v) => typeof v === "boolean", "true or false"],
    layer_norm_eps: [isPositive, "a number > 0"],
    embedding_scale: [isPositive, "a number > 0"],
    positional: [isObject, "an object"],
    attention_bias: [(v) => typeof v === "boolean", "true or false"],
    share_embeddings: [(v) => typeof v === "boolean", "true or false"],
  };
  const POSITIONAL = {
    kind: [(v) => v === "sinusoidal", '"sinusoidal"'],
    base: [isPositive, "a number > 0"],
    // a one-letter word needs 2 source and 2 + 15 decoder positions
    max_len: [(v) => isInt(v, 17), "an int >= 17"],
  };

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

  function checkVocab(v, where) {
    if (!isObject(v)) refuse(`the export lacks ${where} (an object)`);
    const tokens = v.tokens;
    if (!Array.isArray(tokens) || tokens.length < 3 || !tokens.every((t) => typeof t === "string")) {
      refuse(`${where}.tokens must be a list of at least 3 strings`);
    }
    for (const key of ["pad_id", "bos_id", "eos_id"]) {
      if (!isInt(v[key], 0) || v[key] >= tokens.length) {
        refuse(`${where}.${key} must be an id below ${tokens.length}, got ${JSON.stringify(v[key])}`);
      }
    }
  }

  // name -> shape of every tensor the model described by `a` has
  function expectedTensors(a, nLetters, nPhonemes) {
    const d = a.d_model;
    const shapes = { "src_embed.lut.weight": [nLetters, d], "tgt_embed.lut.weight": [nPhonemes, d] };
    const linearLayer = (p, dOut, dIn, bias) => {
      shapes[p + ".weight"] = [dOut, dIn];
      if (bias) shapes[p + ".bias"] = [dOut];
    };
    const norm = (p) => {
      shapes[p + ".weight"] = [d];
      shapes[p + ".bias"] = [d];
    };
    const attention = (p) => {
      for (const w of ["w_q", "w_k", "w_v", "w_o"]) linearLayer(`${p}.${w}`, d, d, a.attention_bias);
    };
    const layer = (p, attns, subs) => {
      attns.forEach((n) => attention(p + n));
      linearLayer(p + "ffn.w_1", a.d_ff, d, true);
      linearLayer(p + "ffn.w_2", d, a.d_ff, true);
      for (let i = 1; i <= subs; i++) norm(`${p}sub${i}.norm`);
    };
    for (let l = 0; l < a.num_encoder_layers; l++) layer(`encoder.layers.${l}.`, ["self_attn"], 2);
    for (let l = 0; l < a.num_decoder_layers; l++) {
      layer(`decoder.layers.${l}.`, ["self_attn", "cross_attn"], 3);
    }
    if (a.final_norm) {
      norm("encoder.norm");
      norm("decoder.norm");
    }
    linearLayer("generator", nPhonemes, d, true);
    return shapes;
  }

  // the whole export, before any weight is decoded; throws ExportError
  function checkExport(data) {
    if (!isObject(data)) refuse("the weights file holds no export (PRONOUNCER_DATA is missing)");
    if (data.format !== FORMAT) {
      refuse(`not a pronouncer export: format ${JSON.stringify(data.format)}, expected "${FORMAT}"`);
    }
    if (data.format_version !== FORMAT_VERSION) {
      refuse(
        `export format version ${JSON.stringify(data.format_version)}: this page reads ` +
          `version ${FORMAT_VERSION} only (rebuild it: python -m tools.export_pronouncer)`,
      );
    }
    const a = data.architecture;
    if (!isObject(a)) refuse("the export lacks architecture (an object)");
    checkFields(a, ARCHITECTURE, "architecture");
    checkFields(a.positional, POSITIONAL, "architecture.positional");
    if (a.d_model % a.num_heads) {
      refuse(`architecture.d_model (${a.d_model}) must be a multiple of num_heads (${a.num_heads})`);
    }
    if (a.final_norm !== (a.norm === "pre")) {
      refuse(`architecture.final_norm is ${a.final_norm} with norm "${a.norm}": ` +
        "the course's model has final LayerNorms exactly when it is Pre-Norm");
    }
    checkVocab(data.letters, "letters");
    checkVocab(data.phonemes, "phonemes");
    for (const ch of "abcdefghijklmnopqrstuvwxyz") {
      if (!data.letters.tokens.includes(ch)) refuse(`letters.tokens lacks the letter "${ch}"`);
    }
    for (const key of ["examples", "test"]) {
      if (!isObject(data[key])) refuse(`the export lacks ${key} (an object)`);
    }
    if (!Array.isArray(data.tensors)) refuse("the export lacks tensors (a list)");
    if (typeof data.fp16 !== "string") refuse("the export lacks fp16 (base64 text)");
    const want = expectedTensors(a, data.letters.tokens.length, data.phonemes.tokens.length);
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
      total = Math.max(total, offset + shape.reduce((x, y) => x * y, 1));
    }
    const missing = Object.keys(want).filter((name) => !seen.has(name));
    if (missing.length) {
      const more = missing.length > 3 ? ", …" : "";
      refuse(`the export lacks tensor${missing.length > 1 ? "s" : ""} ${missing.slice(0, 3).join(", ")}${more}`);
    }
    // base64: 4 characters per 3 bytes, "=" padding at the end
    const bytes = (data.fp16.length / 4) * 3 - (data.fp16.match(/=*$/)[0].length);
    if (bytes < 2 * total) refuse(`fp16 holds ${bytes} bytes, the tensors need ${2 * total}`);
    return a;
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
    const weights = {};
    for (const [name, shape, offset] of data.tensors) {
      const n = shape.reduce((a, b) => a * b, 1);
      const out = new Float32Array(n); // row-major, as in PyTorch
      for (let i = 0; i < n; i++) {
        const j = 2 * (offset + i); // little-endian halves
        out[i] = halfToFloat(raw.charCodeAt(j) | (raw.charCodeAt(j + 1) << 8));
      }
      weights[name] = out;
    }
    return weights;
  }

  // ---------- the layers, on rows of a (n, width) Float32Array ----------

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

  // FeedForward: w_2(relu(w_1 x)), (n, d) -> (n, d_ff) -> (n, d)
  function ffn(W, p, x, n, d, dff) {
    const hid = linear(x, n, W[p + "w_1.weight"], W[p + "w_1.bias"], d, dff);
    for (let i = 0; i < hid.length; i++) if (hid[i] < 0) hid[i] = 0;
    return linear(hid, n, W[p + "w_2.weight"], W[p + "w_2.bias"], dff, d);
  }

  // softmax(q k^T / sqrt(dh)) v for each head; q (nq, d), k and v (nk, d)
  // (head j = columns j*dh .. (j+1)*dh). causal: query r sees keys <= r +
  // (nk - nq). Returns out (nq, d) and weights[head] (nq, nk).
  function attention(q, k, v, nq, nk, d, h, causal) {
    const dh = d / h;
    const scale = Math.sqrt(dh);
    const out = new Float32Array(nq * d);
    const weights = [];
    const row = new Float32Array(nk);
    for (let j = 0; j < h; j++) {
      const w = new Float32Array(nq * nk);
      for (let r = 0; r < nq; r++) {
        const last = causal ? r + nk - nq : nk - 1;
        let max = -Infinity;
        for (let c = 0; c <= last; c++) {
          let s = 0;
          for (let i = 0; i < dh; i++) {
            s += q[r * d + j * dh + i] * k[c * d + j * dh + i];
          }
          row[c] = s / scale;
          if (row[c] > max) max = row[c];
        }
        let sum = 0;
        for (let c = 0; c <= last; c++) {
          row[c] = Math.exp(row[c] - max);
          sum += row[c];
        }
        for (let c = 0; c <= last; c++) w[r * nk + c] = row[c] / sum;
        for (let i = 0; i < dh; i++) {
          let s = 0;
          for (let c = 0; c <= last; c++) {
            s += w[r * nk + c] * v[c * d + j * dh + i];
          }
          out[r * d + j * dh + i] = s;
        }
      }
      weights.push(w);
    }
    return { out, weights };
  }

  function project(W, p, name, x, n, d) {
    return linear(x, n, W[p + name + ".weight"], W[p + name + ".bias"], d, d);
  }

  // PositionalEncoding's table: PE[pos, 2i] = sin(pos / base^(2i/d)),
  // PE[pos, 2i+1] = cos(...), computed in double, stored as float32
  function positions(maxLen, d, base) {
    const pe = new Float32Array(maxLen * d);
    for (let pos = 0; pos < maxLen; pos++) {
      for (let i = 0; i < d; i += 2) {
        const angle = pos / Math.pow(base, i / d);
        pe[pos * d + i] = Math.sin(angle);
        pe[pos * d + i + 1] = Math.cos(angle);
      }
    }
    return pe;
  }

  // ---------- the model ----------

  class Pronouncer {
    // data: the export (window.PRONOUNCER_DATA); throws ExportError if this
    // script cannot compute it
    constructor(data) {
      this.arch = checkExport(data);
      this.letters = data.letters.tokens;
      this.phonemes = data.phonemes.tokens;
      this.srcEos = data.letters.eos_id;
      this.ids = data.phonemes; // pad_id, bos_id, eos_id of the output
      this.maxLen = this.arch.positional.max_len;
      this.W = loadTensors(data);
      this.pe = positions(this.maxLen, this.arch.d_model, this.arch.positional.base);
    }

    // Embeddings (times embedding_scale) + positions: ids -> (n, d)
    embed(table, ids, start) {
      const d = this.arch.d_model;
      const lut = this.W[table + ".lut.weight"];
      const x = new Float32Array(ids.length * d);
      const scale = this.arch.embedding_scale;
      for (let r = 0; r < ids.length; r++) {
        for (let i = 0; i < d; i++) {
          const e = Math.fround(lut[ids[r] * d + i] * scale);
          x[r * d + i] = e + this.pe[(start + r) * d + i];
        }
      }
      return x;
    }

    // LayerNorm `p` (its .weight and .bias) on x (n, d)
    norm(p, x, n) {
      const d = this.arch.d_model;
      return layerNorm(x, n, d, this.W[p + ".weight"], this.W[p + ".bias"], this.arch.layer_norm_eps);
    }

    // utils.layers.Residual around f, with LayerNorm `p`: Post-Norm
    // LN(x + f(x)), Pre-Norm x + f(LN(x)); x (n, d) -> (n, d)
    residual(p, x, n, f) {
      if (this.arch.norm === "pre") return add(x, f(this.norm(p, x, n)));
      return this.norm(p, add(x, f(x)), n);
    }

    // encode: letter ids + EOS (S,) -> memory (S, d) and each decoder
    // layer's cross-attention keys and values (S, d), projected once (the
    // static cache)
    encode(src) {
      const { d_model: d, num_heads: h, d_ff: dff } = this.arch;
      const W = this.W;
      const n = src.length;
      let x = this.embed("src_embed", src, 0); // (S, d)
      for (let l = 0; l < this.arch.num_encoder_layers; l++) {
        const p = `encoder.layers.${l}.`;
        x = this.residual(p + "sub1.norm", x, n, (y) => {
          const q = project(W, p, "self_attn.w_q", y, n, d);
          const k = project(W, p, "self_attn.w_k", y, n, d);
          const v = project(W, p, "self_attn.w_v", y, n, d);
          const a = attention(q, k, v, n, n, d, h, false).out;
          return project(W, p, "self_attn.w_o", a, n, d);
        });
        x = this.residual(p + "sub2.norm", x, n, (y) => ffn(W, p + "ffn.", y, n, d, dff));
      }
      if (this.arch.final_norm) x = this.norm("encoder.norm", x, n);
      const cross = [];
      for (let l = 0; l < this.arch.num_decoder_layers; l++) {
        const p = `decoder.layers.${l}.`;
        cross.push({
          k: project(W, p, "cross_attn.w_k", x, n, d),
          v: project(W, p, "cross_attn.w_v", x, n, d),
        });
      }
      return { memory: x, n, cross };
    }

    // an empty decoder cache: per layer, self-attention keys/values (t, d)
    startCache() {
      const layers = [];
      for (let l = 0; l < this.arch.num_decoder_layers; l++) {
        layers.push({ k: new Float32Array(0), v: new Float32Array(0) });
      }
      return { length: 0, layers };
    }

    // one decoder step: the token at position cache.length -> log p(next)
    // (V,) (PAD gets -inf) and the cross-attention weights [layer][head]
    // (S,); the cache grows by one position
    step(enc, cache, token) {
      const { d_model: d, num_heads: h, d_ff: dff } = this.arch;
      const W = this.W;
      const t = cache.length;
      let x = this.embed("tgt_embed", [token], t); // (1, d)
      const crossWeights = [];
      for (let l = 0; l < this.arch.num_decoder_layers; l++) {
        const p = `decoder.layers.${l}.`;
        const c = cache.layers[l];
        // masked self-attention: the new query sees the t cached + itself
        // (their keys and values are projected from the sublayer's input:
        // LN(x) when Pre-Norm)
        x = this.residual(p + "sub1.norm", x, 1, (y) => {
          const q = project(W, p, "self_attn.w_q", y, 1, d);
          const k = new Float32Array((t + 1) * d);
          const v = new Float32Array((t + 1) * d);
          k.set(c.k);
          v.set(c.v);
          k.set(project(W, p, "self_attn.w_k", y, 1, d), t * d);
          v.set(project(W, p, "self_attn.w_v", y, 1, d), t * d);
          c.k = k;
          c.v = v;
          const a = attention(q, k, v, 1, t + 1, d, h, true).out;
          return project(W, p, "self_attn.w_o", a, 1, d);
        });
        // cross-attention over the encoder memory (1, S)
        x = this.residual(p + "sub2.norm", x, 1, (y) => {
          const qc = project(W, p, "cross_attn.w_q", y, 1, d);
          const cr = attention(qc, enc.cross[l].k, enc.cross[l].v, 1, enc.n, d, h, false);
          crossWeights.push(cr.weights);
          return project(W, p, "cross_attn.w_o", cr.out, 1, d);
        });
        x = this.residual(p + "sub3.norm", x, 1, (y) => ffn(W, p + "ffn.", y, 1, d, dff));
      }
      if (this.arch.final_norm) x = this.norm("decoder.norm", x, 1);
      cache.length = t + 1;
      const V = this.phonemes.length;
      const logits = linear(x, 1, W["generator.weight"], W["generator.bias"], d, V);
      // log-softmax: x - max - log(sum(exp(x - max)))
      let max = -Infinity;
      for (let i = 0; i < V; i++) if (logits[i] > max) max = logits[i];
      let sum = 0;
      for (let i = 0; i < V; i++) sum += Math.exp(logits[i] - max);
      const lse = Math.fround(max + Math.log(sum));
      const logp = new Float32Array(V);
      for (let i = 0; i < V; i++) logp[i] = logits[i] - lse;
      logp[this.ids.pad_id] = -Infinity; // PAD is never a next token
      return { logp, crossWeights };
    }

    // a word -> source ids: its letters, then the letters' EOS (S,)
    source(word) {
      return [...word].map((ch) => this.letters.indexOf(ch)).concat(this.srcEos);
    }

    // the most probable phoneme at every step, up to len(word) + 15 of them
    // (utils.pronunciation.pronounce); attention[layer][head][step] (S,)
    greedy(word) {
      const { bos_id: bos, eos_id: eos } = this.ids;
      const L = this.arch.num_decoder_layers;
      const h = this.arch.num_heads;
      const src = this.source(word);
      const enc = this.encode(src);
      const cache = this.startCache();
      const attention = [];
      for (let l = 0; l < L; l++) attention.push(Array.from({ length: h }, () => []));
      const out = [];
      let token = bos;
      for (let s = 0; s < src.length + 15; s++) {
        const { logp, crossWeights } = this.step(enc, cache, token);
        for (let l = 0; l < L; l++) {
          for (let j = 0; j < h; j++) attention[l][j].push(Array.from(crossWeights[l][j]));
        }
        token = 0; // argmax: the first of equal maxima, as torch.argmax
        for (let i = 1; i < logp.length; i++) if (logp[i] > logp[token]) token = i;
        if (token === eos) break;
        out.push(this.phonemes[token]);
      }
      return { phonemes: out, attention, letters: [...word, "EOS"] };
    }

    // utils.decoding.beam_search for one word: k beams; score = sum of
    // log-probs (EOS included) / length^alpha; finished beams stay and
    // compete (they continue with PAD at no cost); the n best, finished
    // first. Returns [{phonemes, score}], best first.
    beam(word, k = 4, numReturn = 4, alpha = 0) {
      const { pad_id: pad, bos_id: bos, eos_id: eos } = this.ids;
      const V = this.phonemes.length;
      const src = this.source(word);
      const enc = this.encode(src);
      const norm = (score, n) => (alpha ? Math.fround(score / Math.pow(Math.max(n, 1), alpha)) : score);
      let beams = [];
      for (let j = 0; j < k; j++) {
        // one live beam at the start, so the k beams differ
        beams.push({ ys: [bos], raw: j === 0 ? 0 : -Infinity, length: 0, done: false, cache: this.startCache() });
      }
      for (let s = 0; s < src.length + 15; s++) {
        const cand = []; // (k * V) candidates: [score, flat index, raw, length]
        for (let j = 0; j < k; j++) {
          const b = beams[j];
          let logp;
          if (b.done) {
            logp = new Float32Array(V).fill(-Infinity);
            logp[pad] = 0;
          } else if (b.raw === -Infinity) {
            logp = new Float32Array(V).fill(-Infinity); // a dead start beam
          } else {
            logp = this.step(enc, b.cache, b.ys[b.ys.length - 1]).logp;
          }
          const len = b.length + (b.done ? 0 : 1);
          for (let i = 0; i < V; i++) {
            const raw = Math.fround(b.raw + logp[i]);
            cand.push([norm(raw, len), j * V + i, raw, len]);
          }
        }
        // topk: best first; on equal scores the lower flat index first
        cand.sort((a, b) => b[0] - a[0] || a[1] - b[1] || 0);
        const next = [];
        for (let j = 0; j < k; j++) {
          const [score, idx, raw, len] = cand[j];
          const parent = beams[Math.floor(idx / V)];
          const token = idx % V;
          next.push({
            ys: parent.ys.concat(token),
            raw,
            length: len,
            done: parent.done || token === eos || score === -Infinity,
            cache: copyCache(parent.cache),
          });
        }
        beams = next;
        if (beams.every((b) => b.done)) break;
      }
      const ranked = beams
        .map((b) => {
          const last = b.ys[b.ys.length - 1];
          const ended = last === pad || last === eos;
          return { b, final: norm(b.raw, b.length), key: norm(b.raw, b.length) - (ended ? 0 : 1e9) };
        })
        .sort((x, y) => y.key - x.key);
      const results = [];
      for (const { b, final } of ranked) {
        if (!isFinite(final) || results.length === numReturn) continue;
        const ids = b.ys.slice(1, 1 + b.length).filter((i) => i !== eos);
        results.push({ phonemes: ids.map((i) => this.phonemes[i]), score: final });
      }
      return results;
    }
  }

  function copyCache(cache) {
    return {
      length: cache.length,
      layers: cache.layers.map((c) => ({ k: c.k, v: c.v })), // step() replaces, never mutates
    };
  }

  // ---------- the widget ----------

  const TEXT = {
    en: {
      load: "Load the pronouncer",
      loading: "Loading the weights…",
      loaded: (mb) => `Loaded: ${mb} MB of weights and test words, computed in your browser.`,
      failed: "The weights could not be loaded.",
      refused: (why) => `This page cannot run the exported model: ${why}.`,
      label: "Type an English word (or an invented one):",
      placeholder: "e.g. pronunciation",
      empty: "Type a word: the letters a to z.",
      letters: "Only the letters a to z, please (no digits, spaces, accents or other scripts).",
      tooLong: (n) => `At most ${n} letters: the model has positions for no more.`,
      greedy: "Greedy",
      beam: "Beam search (4 beams), best first",
      score: "score (log-probability)",
      truth: "In the dictionary (a held-out test word, never seen in training):",
      right: "the greedy answer is one of them",
      wrong: "the greedy answer is none of them",
      notTest: (n) => `Not a held-out test word: a training word or an invented one (only the ${n.toLocaleString("en")} test words' pronunciations ship with this page).`,
      attention: "Cross-attention: which letters each output phoneme looked at, per layer and head (rows: phonemes written, columns: letters read; · marks the end of the word).",
      layerHead: (l, h) => `layer ${l}, head ${h}`,
      heatAlt: (l, h, w) => `Cross-attention weights of layer ${l}, head ${h} for “${w}”`,
      asIn: "as in",
      timing: (g, b) => `greedy ${g} ms, beam ${b} ms`,
    },
    zh: {
      load: "加载发音模型",
      loading: "正在加载权重……",
      loaded: (mb) => `已加载：${mb} MB 的权重和测试词，全部在你的浏览器里计算。`,
      failed: "权重未能加载。",
      refused: (why) => `本页无法运行导出的模型：${why}。`,
      label: "输入一个英语单词（也可以是自造的词）：",
      placeholder: "例如 pronunciation",
      empty: "请输入一个单词：字母 a 到 z。",
      letters: "只接受字母 a 到 z（不要数字、空格、重音符号或其他文字）。",
      tooLong: (n) => `最多 ${n} 个字母：模型的位置编码只到这么长。`,
      greedy: "贪心解码",
      beam: "束搜索（束宽 4），最好的在前",
      score: "得分（对数概率）",
      truth: "词典中的发音（留出的测试词，训练时从未见过）：",
      right: "贪心解码的结果是其中之一",
      wrong: "贪心解码的结果不在其中",
      notTest: (n) => `不是留出的测试词：可能是训练词或自造的词（本页只附带 ${n} 个测试词的发音）。`,
      attention: "交叉注意力：每个输出音素看了哪些字母，按层和头分开（行：写出的音素，列：读入的字母；· 表示单词结束）。",
      layerHead: (l, h) => `第 ${l} 层，第 ${h} 个头`,
      heatAlt: (l, h, w) => `“${w}”在第 ${l} 层第 ${h} 个头的交叉注意力权重`,
      asIn: "如",
      timing: (g, b) => `贪心解码 ${g} 毫秒，束搜索 ${b} 毫秒`,
    },
  };

  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key === "text") node.textContent = value;
      else node.setAttribute(key, value);
    }
    for (const child of children || []) node.append(child);
    return node;
  }

  // one phoneme as a chip: "AY as in bite"
  function chip(p, examples, T) {
    return el("span", { class: "pl-phoneme", title: `${p} ${T.asIn} ${examples[p]}` }, [
      el("b", { text: p }),
      ` ${T.asIn} `,
      el("i", { text: examples[p] || "" }),
    ]);
  }

  // a heatmap of weights (rows x cols), values 0..1, drawn on a canvas
  function heatmap(weights, rows, cols, width, alt) {
    const label = 34;
    const cell = Math.max(4, Math.min(18, Math.floor((width - label) / cols.length)));
    const canvas = el("canvas", { role: "img", "aria-label": alt, class: "pl-heat" });
    const ratio = window.devicePixelRatio || 1;
    const w = label + cell * cols.length;
    const h = label + cell * rows.length;
    canvas.width = w * ratio;
    canvas.height = h * ratio;
    canvas.style.width = `${w}px`;
    canvas.style.height = `${h}px`;
    const ctx = canvas.getContext("2d");
    ctx.scale(ratio, ratio);
    ctx.fillStyle = "#fff";
    ctx.fillRect(0, 0, w, h);
    for (let r = 0; r < rows.length; r++) {
      for (let c = 0; c < cols.length; c++) {
        const v = weights[r][c];
        const shade = Math.round(255 * (1 - v));
        ctx.fillStyle = `rgb(${shade}, ${shade}, 255)`;
        ctx.fillRect(label + c * cell, label + r * cell, cell, cell);
      }
    }
    ctx.fillStyle = "#222";
    ctx.font = `${Math.min(11, cell)}px sans-serif`;
    ctx.textAlign = "center";
    cols.forEach((c, i) => ctx.fillText(c === "EOS" ? "·" : c, label + (i + 0.5) * cell, label - 4));
    ctx.textAlign = "right";
    ctx.font = "10px sans-serif";
    rows.forEach((p, i) => ctx.fillText(p, label - 3, label + (i + 0.75) * cell));
    return canvas;
  }

  function setup(root) {
    const T = document.documentElement.lang.toLowerCase().startsWith("zh") ? TEXT.zh : TEXT.en;
    const status = el("p", { class: "pl-status", "aria-live": "polite" });
    const button = el("button", { type: "button", class: "pl-load", text: T.load });
    root.append(button, status);
    const api = { model: null, last: null, data: null, job: 0 };
    window.PronouncerLive = api;

    button.addEventListener("click", () => {
      button.disabled = true;
      status.textContent = T.loading;
      const script = el("script", { src: HERE + "weights.js" });
      script.onload = () => {
        const data = window.PRONOUNCER_DATA;
        api.data = data;
        try {
          api.model = new Pronouncer(data);
        } catch (err) {
          if (!(err instanceof ExportError)) throw err;
          // an export this script cannot compute: say why, compute nothing
          button.remove();
          status.textContent = T.refused(err.message);
          status.classList.add("pl-refused");
          root.dataset.state = "refused";
          return;
        }
        button.remove();
        const bytes = data.fp16.length + JSON.stringify(data.test).length;
        status.textContent = T.loaded((bytes / 1e6).toFixed(1));
        start(root, api, data, T);
      };
      script.onerror = () => {
        status.textContent = T.failed;
        button.disabled = false;
      };
      document.head.append(script);
    });
  }

  function start(root, api, data, T) {
    const maxLetters = api.model.maxLen - 16; // len + 1 + 15 positions
    const input = el("input", {
      type: "text",
      class: "pl-input",
      placeholder: T.placeholder,
      autocomplete: "off",
      autocapitalize: "off",
      spellcheck: "false",
      "aria-label": T.label,
    });
    const message = el("p", { class: "pl-message", role: "status" });
    const output = el("div", { class: "pl-output" });
    root.append(el("label", { class: "pl-label", text: T.label }), input, message, output);
    api.input = input;

    // ev.timeStamp: when the keystroke's input event was made, so the
    // time shown runs from the keystroke to the greedy answer on the page
    function run(ev) {
      const t0 = ev && ev.timeStamp ? ev.timeStamp : performance.now();
      const word = input.value.trim().toLowerCase();
      output.replaceChildren();
      message.textContent = "";
      if (!word) message.textContent = T.empty;
      else if (!/^[a-z]+$/.test(word)) message.textContent = T.letters;
      else if (word.length > maxLetters) message.textContent = T.tooLong(maxLetters);
      if (message.textContent) {
        root.dataset.state = "error";
        api.job++;
        api.last = { word, error: message.textContent };
        root.dataset.word = word;
        return;
      }
      root.dataset.state = "busy";
      const g = api.model.greedy(word);
      const greedyRow = el("p", { class: "pl-greedy", "data-phonemes": g.phonemes.join(" ") }, [
        el("strong", { text: `${T.greedy}: ` }),
        ...g.phonemes.map((p) => chip(p, data.examples, T)),
      ]);
      output.append(greedyRow);
      const t1 = performance.now(); // keystroke -> greedy answer in the page
      // the greedy answer is painted first; the beam and the heatmaps
      // follow in the next task (dropped if another key came meanwhile)
      const job = ++api.job;
      setTimeout(() => job === api.job && rest(word, g, t0, t1), 0);
    }

    function rest(word, g, t0, t1) {
      const t2a = performance.now();
      const b = api.model.beam(word, 4, 4, 0);
      const t2 = performance.now();
      const list = el("ol", { class: "pl-beam" });
      for (const r of b) {
        list.append(el("li", { "data-phonemes": r.phonemes.join(" "), "data-score": String(r.score) }, [
          el("code", { text: r.phonemes.join(" ") }),
          ` (${T.score} ${r.score.toFixed(3)})`,
        ]));
      }
      output.append(el("p", {}, [el("strong", { text: T.beam })]), list);
      const truth = data.test[word];
      if (truth) {
        const prons = truth.split("|");
        const ok = prons.includes(g.phonemes.join(" "));
        output.append(el("p", { class: "pl-truth", "data-truth": truth }, [
          T.truth + " ",
          ...prons.map((p, i) => el("code", { text: p + (i < prons.length - 1 ? "; " : "") })),
          ` (${ok ? T.right : T.wrong})`,
        ]));
      } else {
        output.append(el("p", { class: "pl-truth" }, [T.notTest(Object.keys(data.test).length)]));
      }
      output.append(el("p", { text: T.attention }));
      const grid = el("div", { class: "pl-grid" });
      const width = Math.min(root.clientWidth || 320, 360);
      const rows = g.phonemes.concat("EOS");
      g.attention.forEach((heads, l) => heads.forEach((w, h) => {
        grid.append(el("figure", { class: "pl-fig" }, [
          heatmap(w, rows, g.letters, width - 8, T.heatAlt(l + 1, h + 1, word)),
          el("figcaption", { text: T.layerHead(l + 1, h + 1) }),
        ]));
      }));
      output.append(grid);
      const timing = T.timing((t1 - t0).toFixed(1), (t2 - t2a).toFixed(1));
      output.append(el("p", { class: "pl-timing", "data-greedy-ms": (t1 - t0).toFixed(2), text: timing }));
      api.last = { word, greedy: g, beam: b, greedyMs: t1 - t0, beamMs: t2 - t2a };
      root.dataset.word = word;
      root.dataset.state = "done";
    }

    input.addEventListener("input", run);
    input.focus();
  }

  // Node (the tests): the engine alone, no widget
  if (typeof module === "object" && module.exports) {
    module.exports = { Pronouncer, checkExport, ExportError, FORMAT, FORMAT_VERSION };
  }
  if (!IN_PAGE) return;

  window.PronouncerModel = Pronouncer; // for tests and the curious

  function init() {
    document.querySelectorAll(".pronouncer-live").forEach(setup);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
