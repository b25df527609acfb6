/* The course's stored pronouncer (chapter 8), run in the page: the model's
 * wiring and the widget. The layers, the export's checks and the weights'
 * decoding are the shared engine's (_static/engine/engine.js), the
 * widget's helpers _static/engine/live.js.
 *
 * The model is utils.model.Transformer, written out here in the same order:
 * embeddings (scaled) + sinusoidal positions, encoder, decoder (masked
 * self-attention with a KV cache, cross-attention, FFN), generator,
 * log-softmax; then greedy decoding and beam search with the rules of
 * utils.decoding. Its architecture is read from the export (weights.js,
 * made by tools/editions/export_pronouncer.py, format FORMAT version
 * FORMAT_VERSION): sizes, layer counts, Post-Norm (LN(x + F(x))) or
 * Pre-Norm (x + F(LN(x)), then a final LayerNorm after each stack),
 * LayerNorm eps, embedding scale, positions. checkExport refuses any other
 * version, a missing or unknown field, a setting this script does not
 * compute, and any missing, extra or misshapen tensor, with a message the
 * page shows. weights.js is loaded by a <script> tag only when the reader
 * presses the button. One word at a time: batch size 1, so no padding
 * masks. Shapes in comments: S source positions (letters + EOS), t decoder
 * positions so far, d = d_model, h heads, V phonemes.
 *
 * Under Node (the tests), require() gives { Pronouncer, checkExport,
 * ExportError, FORMAT, FORMAT_VERSION, TEXT } and no widget is set up.
 */
(function () {
  "use strict";

  const NODE = typeof module === "object" && module.exports;
  const E = NODE ? require("../engine/engine.js") : window.CourseEngine;
  const { isInt, isPositive, isBool, refuse } = E;
  const FORMAT = "course-pronouncer";
  const FORMAT_VERSION = 2;

  // ---------- the export: checked before anything is computed ----------

  // the fields of `architecture` this script computes, each with its test
  // and what it must be
  const EXPORT = {
    name: "pronouncer",
    global: "PRONOUNCER_DATA",
    format: FORMAT,
    version: FORMAT_VERSION,
    tool: "tools.editions.export_pronouncer",
    architecture: {
      model: [(v) => v === "encoder-decoder", '"encoder-decoder"'],
      d_model: [(v) => isInt(v, 2) && v % 2 === 0, "an even int >= 2 (sin/cos pairs)"],
      num_heads: [(v) => isInt(v, 1), "an int >= 1"],
      num_encoder_layers: [(v) => isInt(v, 1), "an int >= 1"],
      num_decoder_layers: [(v) => isInt(v, 1), "an int >= 1"],
      d_ff: [(v) => isInt(v, 1), "an int >= 1"],
      activation: [(v) => v === "relu", '"relu"'],
      norm: [(v) => v === "post" || v === "pre", '"post" or "pre"'],
      final_norm: [isBool, "true or false"],
      layer_norm_eps: [isPositive, "a number > 0"],
      embedding_scale: [isPositive, "a number > 0"],
      positional: [E.isObject, "an object"],
      attention_bias: [isBool, "true or false"],
      share_embeddings: [isBool, "true or false"],
    },
  };
  const POSITIONAL = {
    kind: [(v) => v === "sinusoidal", '"sinusoidal"'],
    base: [isPositive, "a number > 0"],
    // a one-letter word needs 2 source and 2 + 15 decoder positions
    max_len: [(v) => isInt(v, 17), "an int >= 17"],
  };

  function checkVocab(v, where) {
    if (!E.isObject(v)) refuse(`the export lacks ${where} (an object)`);
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
    const s = E.shapes(a.d_model, a.attention_bias);
    s.table("src_embed.lut.weight", nLetters);
    s.table("tgt_embed.lut.weight", nPhonemes);
    const layer = (p, attns, subs) => {
      attns.forEach((n) => s.attention(p + n));
      s.ffn(p + "ffn", a.d_ff);
      for (let i = 1; i <= subs; i++) s.norm(`${p}sub${i}.norm`);
    };
    for (let l = 0; l < a.num_encoder_layers; l++) layer(`encoder.layers.${l}.`, ["self_attn"], 2);
    for (let l = 0; l < a.num_decoder_layers; l++) {
      layer(`decoder.layers.${l}.`, ["self_attn", "cross_attn"], 3);
    }
    if (a.final_norm) {
      s.norm("encoder.norm");
      s.norm("decoder.norm");
    }
    s.linear("generator", nPhonemes, a.d_model);
    return s.want;
  }

  // the whole export, before any weight is decoded; throws ExportError
  function checkExport(data) {
    const a = E.checkExport(data, EXPORT);
    E.checkFields(a.positional, POSITIONAL, "architecture.positional");
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
      if (!E.isObject(data[key])) refuse(`the export lacks ${key} (an object)`);
    }
    E.checkTensors(data, expectedTensors(a, data.letters.tokens.length, data.phonemes.tokens.length));
    return a;
  }

  // ---------- the model ----------

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
      this.W = E.loadTensors(data);
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

    // LayerNorm `p` on x (n, d)
    norm(p, x, n) {
      return E.norm(this.W, p, x, n, this.arch.d_model, this.arch.layer_norm_eps);
    }

    // utils.layers.Residual around f, with LayerNorm `p`: Post-Norm
    // LN(x + f(x)), Pre-Norm x + f(LN(x)); x (n, d) -> (n, d)
    residual(p, x, n, f) {
      if (this.arch.norm === "pre") return E.add(x, f(this.norm(p, x, n)));
      return this.norm(p, E.add(x, f(x)), n);
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
          const [q, k, v] = ["w_q", "w_k", "w_v"].map((w) => E.dense(W, p + "self_attn." + w, y, n, d));
          const a = E.attention(q, k, v, n, n, d, h, false).out;
          return E.dense(W, p + "self_attn.w_o", a, n, d);
        });
        x = this.residual(p + "sub2.norm", x, n, (y) => E.ffn(W, p + "ffn.", y, n, d, dff));
      }
      if (this.arch.final_norm) x = this.norm("encoder.norm", x, n);
      const cross = [];
      for (let l = 0; l < this.arch.num_decoder_layers; l++) {
        const p = `decoder.layers.${l}.cross_attn.`;
        cross.push({ k: E.dense(W, p + "w_k", x, n, d), v: E.dense(W, p + "w_v", x, n, d) });
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
        // masked self-attention: the new query sees the t cached + itself
        // (their keys and values are projected from the sublayer's input:
        // LN(x) when Pre-Norm)
        x = this.residual(p + "sub1.norm", x, 1, (y) =>
          E.selfAttentionStep(W, p + "self_attn.", y, cache.layers[l], t, d, h).out);
        // cross-attention over the encoder memory (1, S)
        x = this.residual(p + "sub2.norm", x, 1, (y) => {
          const qc = E.dense(W, p + "cross_attn.w_q", y, 1, d);
          const cr = E.attention(qc, enc.cross[l].k, enc.cross[l].v, 1, enc.n, d, h, false);
          crossWeights.push(cr.weights);
          return E.dense(W, p + "cross_attn.w_o", cr.out, 1, d);
        });
        x = this.residual(p + "sub3.norm", x, 1, (y) => E.ffn(W, p + "ffn.", y, 1, d, dff));
      }
      if (this.arch.final_norm) x = this.norm("decoder.norm", x, 1);
      cache.length = t + 1;
      const logp = E.logSoftmax(E.dense(W, "generator", x, 1, d, this.phonemes.length));
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
      layers: cache.layers.map((c) => ({ k: c.k, v: c.v })), // full: step() copies, never writes into them
    };
  }

  // ---------- the widget ----------

  // English; the Chinese page's are in locale/zh/live/widgets.yml
  const TEXT = {
    load: "Load the pronouncer",
    loading: "Loading the weights…",
    loaded: "Loaded: {mb} MB of weights and test words, computed in your browser.",
    failed: "The weights could not be loaded.",
    refused: "This page cannot run the exported model: {why}.",
    label: "Type an English word (or an invented one):",
    placeholder: "e.g. pronunciation",
    empty: "Type a word: the letters a to z.",
    letters: "Only the letters a to z, please (no digits, spaces, accents or other scripts).",
    tooLong: "At most {n} letters: the model has positions for no more.",
    greedy: "Greedy",
    beam: "Beam search (4 beams), best first",
    score: "score (log-probability)",
    truth: "In the dictionary (a held-out test word, never seen in training):",
    right: "the greedy answer is one of them",
    wrong: "the greedy answer is none of them",
    notTest: "Not a held-out test word: a training word or an invented one (only the {n} test words' pronunciations ship with this page).",
    attention: "Cross-attention: which letters each output phoneme looked at, per layer and head (rows: phonemes written, columns: letters read; · marks the end of the word).",
    layerHead: "layer {l}, head {h}",
    heatAlt: "Cross-attention weights of layer {l}, head {h} for “{word}”",
    asIn: "as in",
    timing: "greedy {greedy} ms, beam {beam} ms",
  };

  // Node (the tests): the model alone, no widget
  if (NODE) {
    module.exports = { Pronouncer, checkExport, ExportError: E.ExportError, FORMAT, FORMAT_VERSION, TEXT };
    return;
  }
  const { el, say } = window.CourseLive;
  const HERE = window.CourseLive.here();

  // one phoneme as a chip: "AY as in bite"
  function chip(p, examples, T) {
    return el("span", { class: "pl-phoneme", title: `${p} ${T.asIn} ${examples[p]}` }, [
      el("b", { text: p }),
      ` ${T.asIn} `,
      el("i", { text: examples[p] || "" }),
    ]);
  }

  // a heatmap of weights (rows x cols), values 0..1
  function heatmap(weights, rows, cols, width, alt) {
    const label = 34;
    const cell = Math.max(4, Math.min(18, Math.floor((width - label) / cols.length)));
    const { canvas, ctx } = window.CourseLive.heatmap(weights, cols.length, {
      alt, cls: "pl-heat", left: label, top: label, cell,
    });
    ctx.font = `${Math.min(11, cell)}px sans-serif`;
    ctx.textAlign = "center";
    cols.forEach((c, i) => ctx.fillText(c === "EOS" ? "·" : c, label + (i + 0.5) * cell, label - 4));
    ctx.textAlign = "right";
    ctx.font = "10px sans-serif";
    rows.forEach((p, i) => ctx.fillText(p, label - 3, label + (i + 0.75) * cell));
    return canvas;
  }

  function setup(root) {
    const T = window.CourseLive.texts(TEXT);
    const api = { model: null, last: null, data: null, job: 0 };
    window.PronouncerLive = api;
    window.CourseLive.mount(root, {
      prefix: "pl",
      T,
      scripts: [HERE + "weights.js"],
      global: "PRONOUNCER_DATA",
      make: (data) => {
        api.data = data;
        return (api.model = new Pronouncer(data));
      },
      bytes: (data) => data.fp16.length + JSON.stringify(data.test).length,
      start: (model, data) => start(root, api, data, T),
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
      else if (word.length > maxLetters) message.textContent = say(T.tooLong, { n: maxLetters });
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
        const n = Object.keys(data.test).length.toLocaleString("en");
        output.append(el("p", { class: "pl-truth" }, [say(T.notTest, { n })]));
      }
      output.append(el("p", { text: T.attention }));
      const grid = el("div", { class: "pl-grid" });
      const width = Math.min(root.clientWidth || 320, 360);
      const rows = g.phonemes.concat("EOS");
      g.attention.forEach((heads, l) => heads.forEach((w, h) => {
        const at = { l: l + 1, h: h + 1, word };
        grid.append(el("figure", { class: "pl-fig" }, [
          heatmap(w, rows, g.letters, width - 8, say(T.heatAlt, at)),
          el("figcaption", { text: say(T.layerHead, at) }),
        ]));
      }));
      output.append(grid);
      const greedy = (t1 - t0).toFixed(1), beam = (t2 - t2a).toFixed(1);
      output.append(el("p", {
        class: "pl-timing", "data-greedy-ms": (t1 - t0).toFixed(2), text: say(T.timing, { greedy, beam }),
      }));
      api.last = { word, greedy: g, beam: b, greedyMs: t1 - t0, beamMs: t2 - t2a };
      root.dataset.word = word;
      root.dataset.state = "done";
    }

    input.addEventListener("input", run);
    input.focus();
  }

  window.PronouncerModel = Pronouncer; // for tests and the curious
  window.CourseLive.each(".pronouncer-live", setup);
})();
