/* Chapter 11's GPT, run in the page: the model's wiring, the tokenizer and
 * the sampler. The layers, the export's checks and the weights' decoding
 * are the shared engine's (_static/engine/engine.js); the page's widget is
 * gpt_page.js.
 *
 * - Tokenizer: utils.bpe (byte-level BPE): the text cut by GPT-2's pattern
 *   (utils.bpe.PATTERN, its character classes exported by Python's own re
 *   as ranges of code points, so the cut is Python's outside ASCII too),
 *   each chunk's UTF-8 bytes merged in the order the merges were learned.
 * - GPTModel: utils.gpt.GPT, one token at a time through a KV cache: token
 *   + learned position embeddings, Pre-Norm blocks (x + attention(LN(x)),
 *   x + FFN(LN(x))), a final LayerNorm, the tied output layer. The
 *   architecture comes from the export (weights.js, tools/editions/export_gpt.py,
 *   format FORMAT version FORMAT_VERSION); checkExport refuses any other
 *   version, a missing or unknown field, a setting this script does not
 *   compute, and any missing, extra or misshapen tensor, with a message the
 *   page shows.
 * - Mulberry32 and drawToken: proof.rng.Mulberry32 and proof.rng.draw_token
 *   rule for rule (double precision, the same order of every sum), and
 *   generate: proof.rng.generate_seeded (a full window restarts from its
 *   last context / 2 tokens, as GPT.generate), so a seeded sample equals
 *   PyTorch's token for token.
 *
 * Under Node (the tests), require() gives it; in the page it is
 * window.CourseGPT.
 */
(function () {
  "use strict";

  const E = typeof module === "object" && module.exports ? require("../engine/engine.js") : window.CourseEngine;
  const { isInt, refuse } = E;
  const FORMAT = "course-gpt";
  const FORMAT_VERSION = 1;
  // utils.bpe.PATTERN with its character classes named (tools/editions/export_gpt.py)
  const TEMPLATE =
    "'s|'t|'re|'ve|'m|'ll|'d| ?{letter}+| ?{digit}+| ?{other}+" +
    "|{space}+(?!{nonspace})|{space}+";
  const CLASS_NAMES = ["letter", "digit", "space", "other"];

  // ---------- the export: checked before anything is computed ----------

  // the fields of `architecture` this script computes; any other is refused
  const EXPORT = {
    name: "GPT",
    global: "GPT_DATA",
    format: FORMAT,
    version: FORMAT_VERSION,
    tool: "tools.editions.export_gpt",
    architecture: {
      model: [(v) => v === "decoder-only", '"decoder-only"'],
      vocab_size: [(v) => isInt(v, 257), "an int >= 257 (256 bytes and a merge)"],
      context: [(v) => isInt(v, 2), "an int >= 2"],
      d_model: [(v) => isInt(v, 1), "an int >= 1"],
      num_heads: [(v) => isInt(v, 1), "an int >= 1"],
      num_layers: [(v) => isInt(v, 1), "an int >= 1"],
      d_ff: [(v) => isInt(v, 1), "an int >= 1"],
      activation: [(v) => v === "relu", '"relu"'],
      norm: [(v) => v === "pre", '"pre" (x + F(LN(x)))'],
      final_norm: [(v) => v === true, "true"],
      layer_norm_eps: [E.isPositive, "a number > 0"],
      positional: [(v) => v === "learned", '"learned"'],
      attention_bias: [E.isBool, "true or false"],
      tied_output: [(v) => v === true, "true"],
      window_restart: [(v) => isInt(v, 1), "an int >= 1"],
    },
  };

  function checkTokenizer(t, vocab) {
    if (!E.isObject(t)) refuse("the export lacks tokenizer (an object)");
    const known = ["kind", "merges", "pattern", "template", "classes"];
    for (const key of known) if (!(key in t)) refuse(`the export lacks tokenizer.${key}`);
    for (const key of Object.keys(t)) {
      if (!known.includes(key)) refuse(`tokenizer.${key} is a setting this page does not know`);
    }
    if (t.kind !== "byte-bpe") refuse(`tokenizer.kind must be "byte-bpe", got ${JSON.stringify(t.kind)}`);
    if (t.template !== TEMPLATE) {
      refuse(`tokenizer.template is another pre-tokenizer: ${JSON.stringify(t.template)}`);
    }
    const m = t.merges;
    if (!Array.isArray(m) || m.length + 256 !== vocab) {
      refuse(`tokenizer.merges must list ${vocab - 256} merges (vocab_size ${vocab})`);
    }
    m.forEach((pair, i) => {
      if (!Array.isArray(pair) || pair.length !== 2 || !pair.every((x) => isInt(x, 0) && x < 256 + i)) {
        refuse(`tokenizer.merges[${i}] must be two earlier ids, got ${JSON.stringify(pair)}`);
      }
    });
    if (!E.isObject(t.classes)) refuse("the export lacks tokenizer.classes (an object)");
    for (const name of CLASS_NAMES) {
      const ranges = t.classes[name];
      if (!Array.isArray(ranges) || !ranges.length) refuse(`tokenizer.classes.${name} must be a list of ranges`);
      let last = -1;
      for (const r of ranges) {
        if (!Array.isArray(r) || r.length !== 2 || !isInt(r[0], last + 1) || !isInt(r[1], r[0]) || r[1] > 0x10ffff) {
          refuse(`tokenizer.classes.${name} holds a bad range ${JSON.stringify(r)}`);
        }
        last = r[1];
      }
    }
    if (Object.keys(t.classes).length !== CLASS_NAMES.length) {
      refuse(`tokenizer.classes must be exactly ${CLASS_NAMES.join(", ")}`);
    }
  }

  // name -> shape of every tensor of the model `a` describes
  function expectedTensors(a) {
    const s = E.shapes(a.d_model, a.attention_bias);
    s.table("tok_emb.weight", a.vocab_size);
    s.table("pos_emb.weight", a.context);
    for (let l = 0; l < a.num_layers; l++) {
      const p = `stack.layers.${l}.`;
      s.attention(p + "self_attn");
      s.ffn(p + "ffn", a.d_ff);
      s.norm(p + "sub1.norm");
      s.norm(p + "sub2.norm");
    }
    s.norm("stack.norm");
    return s.want;
  }

  // the whole export, before any weight is decoded; throws ExportError
  function checkExport(data) {
    const a = E.checkExport(data, EXPORT);
    if (a.window_restart >= a.context) {
      refuse(`architecture.window_restart (${a.window_restart}) must be below the context (${a.context})`);
    }
    checkTokenizer(data.tokenizer, a.vocab_size);
    E.checkTensors(data, expectedTensors(a));
    return a;
  }

  // ---------- the tokenizer: utils.bpe ----------

  const hex = (c) => `\\u{${c.toString(16)}}`;
  const ranges = (list) => list.map(([a, b]) => (a === b ? hex(a) : `${hex(a)}-${hex(b)}`)).join("");

  class Tokenizer {
    constructor(t) {
      const cls = {};
      for (const name of CLASS_NAMES) cls[name] = `[${ranges(t.classes[name])}]`;
      cls.nonspace = `[^${ranges(t.classes.space)}]`;
      const source = TEMPLATE.replace(/\{(\w+)\}/g, (_, name) => cls[name]);
      this.regex = new RegExp(source, "gu");
      this.ranks = new Map(); // (left, right) -> new id, the rank order
      this.table = []; // id -> its bytes
      for (let b = 0; b < 256; b++) this.table.push(Uint8Array.of(b));
      t.merges.forEach(([a, b], i) => {
        this.ranks.set(a * 0x100000 + b, 256 + i);
        const joined = new Uint8Array(this.table[a].length + this.table[b].length);
        joined.set(this.table[a]);
        joined.set(this.table[b], this.table[a].length);
        this.table.push(joined);
      });
      this.utf8 = new TextEncoder();
      this.memo = new Map(); // chunk -> ids, as utils.bpe.encode's `done`
    }

    // utils.bpe.pretokenize: the chunks, which join back to the text
    pretokenize(text) {
      return Array.from(text.matchAll(this.regex), (m) => m[0]);
    }

    // utils.bpe._encode_chunk: merge the pair learned first, everywhere,
    // until no known pair is left
    encodeChunk(bytes) {
      let ids = Array.from(bytes);
      while (ids.length > 1) {
        let best = -1;
        for (let i = 0; i + 1 < ids.length; i++) {
          const r = this.ranks.get(ids[i] * 0x100000 + ids[i + 1]);
          if (r !== undefined && (best < 0 || r < best)) best = r;
        }
        if (best < 0) break;
        const out = [];
        for (let i = 0; i < ids.length; i++) {
          if (i + 1 < ids.length && this.ranks.get(ids[i] * 0x100000 + ids[i + 1]) === best) {
            out.push(best);
            i++;
          } else out.push(ids[i]);
        }
        ids = out;
      }
      return ids;
    }

    encode(text) {
      const ids = [];
      for (const chunk of this.pretokenize(text)) {
        if (!this.memo.has(chunk)) this.memo.set(chunk, this.encodeChunk(this.utf8.encode(chunk)));
        ids.push(...this.memo.get(chunk));
      }
      return ids;
    }

    // the tokens' bytes joined, read as UTF-8 (U+FFFD where invalid)
    decode(ids) {
      const parts = ids.map((i) => this.table[i]);
      const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
      let at = 0;
      for (const p of parts) {
        all.set(p, at);
        at += p.length;
      }
      return new TextDecoder("utf-8").decode(all);
    }
  }

  // ---------- the model: utils.gpt.GPT ----------

  class GPTModel {
    // data: the export (window.GPT_DATA); throws ExportError if this script
    // cannot compute it
    constructor(data) {
      this.arch = checkExport(data);
      this.tokenizer = new Tokenizer(data.tokenizer);
      this.W = E.loadTensors(data);
    }

    // an empty cache: per layer, keys and values for `context` positions
    newCache() {
      const { context: C, d_model: d, num_layers: L } = this.arch;
      const layers = [];
      for (let l = 0; l < L; l++) layers.push({ k: new Float32Array(C * d), v: new Float32Array(C * d) });
      return { length: 0, layers };
    }

    // one token at window position cache.length -> the logits of the next
    // (V,) and the attention of this query, [layer][head] over the
    // cache.length + 1 positions; the cache grows by one
    step(cache, token) {
      const { d_model: d, num_heads: h, d_ff: dff, vocab_size: V, layer_norm_eps: eps } = this.arch;
      const W = this.W;
      const t = cache.length;
      if (t >= this.arch.context) throw new Error("the window is full");
      let x = new Float32Array(d);
      const tok = W["tok_emb.weight"], pos = W["pos_emb.weight"];
      for (let i = 0; i < d; i++) x[i] = tok[token * d + i] + pos[t * d + i];
      const attention = [];
      for (let l = 0; l < this.arch.num_layers; l++) {
        const p = `stack.layers.${l}.`;
        // x + attention(LN(x)): the new query sees the t cached keys and its own
        let y = E.norm(W, p + "sub1.norm", x, 1, d, eps);
        const a = E.selfAttentionStep(W, p + "self_attn.", y, cache.layers[l], t, d, h);
        attention.push(a.weights);
        x = E.add(x, a.out);
        // x + FFN(LN(x)): w_2(relu(w_1 y))
        y = E.norm(W, p + "sub2.norm", x, 1, d, eps);
        x = E.add(x, E.ffn(W, p + "ffn.", y, 1, d, dff));
      }
      x = E.norm(W, "stack.norm", x, 1, d, eps);
      cache.length = t + 1;
      // the tied output layer: x @ tok_emb^T
      const logits = E.linear(x, 1, tok, null, d, V);
      return { logits, attention };
    }

    // proof.rng.generate_seeded as a generator: yields, per new token,
    // {token, logits, attention, start} (start: the window's first index in
    // `ids`; the logits and attention are those the token was drawn from)
    *generate(ids, newTokens, rng, { temperature = 1, topK = null, topP = null } = {}) {
      const C = this.arch.context;
      const out = ids.slice();
      let start = Math.max(0, out.length - C);
      let cache = null, fed = start;
      for (let n = 0; n < newTokens; n++) {
        if (out.length - start > C) {
          start = out.length - this.arch.window_restart;
          cache = null;
        }
        if (!cache) {
          cache = this.newCache();
          fed = start;
        }
        let r;
        for (; fed < out.length; fed++) r = this.step(cache, out[fed]);
        const token = drawToken(r.logits, rng, temperature, topK, topP);
        out.push(token);
        yield { token, logits: r.logits, attention: r.attention, start };
      }
    }
  }

  // -------- sampling: proof.rng.Mulberry32, proof.rng.draw_token --------

  class Mulberry32 {
    constructor(seed) {
      if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) {
        throw new RangeError(`seed must be an int in [0, 2**32), got ${seed}`);
      }
      this.state = seed >>> 0;
    }

    nextUint32() {
      this.state = (this.state + 0x6d2b79f5) >>> 0;
      let t = this.state;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return (t ^ (t >>> 14)) >>> 0;
    }

    random() {
      return this.nextUint32() / 4294967296;
    }
  }

  // proof.rng.draw_token: temperature 0 -> the first largest logit (no
  // draw); else z = logits / T, ids by z (largest first, then lower id),
  // top-k, e = exp(z - max), top-p (each id while the mass before it is
  // below p), renormalise, inverse CDF with one uniform number
  function drawToken(logits, rng, temperature = 1, topK = null, topP = null) {
    const V = logits.length;
    if (temperature === 0) {
      let best = 0;
      for (let i = 1; i < V; i++) if (logits[i] > logits[best]) best = i;
      return best;
    }
    const z = new Float64Array(V);
    for (let i = 0; i < V; i++) z[i] = logits[i] / temperature;
    let order = Array.from({ length: V }, (_, i) => i);
    order.sort((a, b) => (z[b] - z[a]) || (a - b));
    if (topK !== null && topK < V) order = order.slice(0, topK);
    const top = z[order[0]];
    let e = order.map((i) => Math.exp(z[i] - top));
    if (topP !== null) {
      let total = 0;
      for (const x of e) total += x;
      let kept = 0, before = 0;
      while (kept < e.length && (kept === 0 || before < topP)) {
        before += e[kept] / total;
        kept++;
      }
      order = order.slice(0, kept);
      e = e.slice(0, kept);
    }
    let total = 0;
    for (const x of e) total += x;
    const u = rng.random();
    let cdf = 0;
    for (let j = 0; j < order.length; j++) {
      cdf += e[j] / total;
      if (u < cdf) return order[j];
    }
    return order[order.length - 1];
  }
  const api = {
    GPTModel, Tokenizer, Mulberry32, drawToken, topTokens: E.topTokens, checkExport,
    ExportError: E.ExportError, FORMAT, FORMAT_VERSION,
  };
  if (typeof module === "object" && module.exports) module.exports = api;
  if (typeof window !== "undefined") window.CourseGPT = api;
})();
