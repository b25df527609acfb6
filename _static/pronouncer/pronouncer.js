/* The course's stored pronouncer (chapter 8), run in the page in plain
 * JavaScript: no framework, no WebAssembly, nothing from outside the site.
 *
 * The model is utils.model.Transformer (Post-Norm, sinusoidal positions,
 * embeddings scaled by sqrt(d_model)), written out here in the same order:
 * embeddings + positions, encoder, decoder (masked self-attention with a
 * KV cache, cross-attention, FFN), generator, log-softmax; then greedy
 * decoding and beam search with the rules of utils.decoding. Every vector
 * is a Float32Array; the weights are the checkpoint's fp16 numbers decoded
 * to float32 (weights.js, made by tools/export_pronouncer.py, loaded by a
 * <script> tag only when the reader presses the button, so it also works
 * from file://). One word at a time: batch size 1, so no padding masks.
 * Shapes in comments: S source positions (letters + EOS), t decoder
 * positions so far, d = d_model, h heads, dh = d / h, V phonemes.
 */
(function () {
  "use strict";

  const HERE = document.currentScript.src.replace(/[^/]*$/, "");

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
    const raw = atob(data.fp16);
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

  // nn.Linear: x (n, dIn) -> x W^T + b (n, dOut); W (dOut, dIn)
  function linear(x, n, W, b, dIn, dOut) {
    const y = new Float32Array(n * dOut);
    for (let r = 0; r < n; r++) {
      const xo = r * dIn;
      for (let o = 0; o < dOut; o++) {
        const wo = o * dIn;
        // four partial sums (dIn is a multiple of 4): a faster loop
        let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        for (let i = 0; i < dIn; i += 4) {
          s0 += x[xo + i] * W[wo + i];
          s1 += x[xo + i + 1] * W[wo + i + 1];
          s2 += x[xo + i + 2] * W[wo + i + 2];
          s3 += x[xo + i + 3] * W[wo + i + 3];
        }
        y[r * dOut + o] = b[o] + (s0 + s1) + (s2 + s3);
      }
    }
    return y;
  }

  // nn.LayerNorm(d) on (x + y), row by row: biased variance, eps in the root
  function addNorm(x, y, n, d, g, b) {
    const out = new Float32Array(n * d);
    const z = new Float32Array(d);
    for (let r = 0; r < n; r++) {
      let mean = 0;
      for (let i = 0; i < d; i++) {
        z[i] = x[r * d + i] + y[r * d + i];
        mean += z[i];
      }
      mean /= d;
      let v = 0;
      for (let i = 0; i < d; i++) v += (z[i] - mean) * (z[i] - mean);
      const inv = 1 / Math.sqrt(v / d + 1e-5);
      for (let i = 0; i < d; i++) {
        out[r * d + i] = (z[i] - mean) * inv * g[i] + b[i];
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

  // PositionalEncoding's table: PE[pos, 2i] = sin(pos / 10000^(2i/d)),
  // PE[pos, 2i+1] = cos(...), computed in double, stored as float32
  function positions(maxLen, d) {
    const pe = new Float32Array(maxLen * d);
    for (let pos = 0; pos < maxLen; pos++) {
      for (let i = 0; i < d; i += 2) {
        const angle = pos / Math.pow(10000, i / d);
        pe[pos * d + i] = Math.sin(angle);
        pe[pos * d + i + 1] = Math.cos(angle);
      }
    }
    return pe;
  }

  // ---------- the model ----------

  class Pronouncer {
    constructor(data) {
      this.cfg = data.config;
      this.letters = data.letters;
      this.phonemes = data.phonemes;
      this.W = loadTensors(data);
      this.pe = positions(this.cfg.max_len, this.cfg.d_model);
    }

    // Embeddings (scaled by sqrt(d)) + positions: ids -> (n, d)
    embed(table, ids, start) {
      const d = this.cfg.d_model;
      const lut = this.W[table + ".lut.weight"];
      const x = new Float32Array(ids.length * d);
      const scale = Math.sqrt(d);
      for (let r = 0; r < ids.length; r++) {
        for (let i = 0; i < d; i++) {
          const e = Math.fround(lut[ids[r] * d + i] * scale);
          x[r * d + i] = e + this.pe[(start + r) * d + i];
        }
      }
      return x;
    }

    // encode: letter ids + EOS (S,) -> memory (S, d) and each layer's cross-
    // attention keys and values (S, d), projected once (the static cache)
    encode(src) {
      const { d_model: d, num_heads: h, d_ff: dff, num_layers: L } = this.cfg;
      const W = this.W;
      const n = src.length;
      let x = this.embed("src_embed", src, 0); // (S, d)
      for (let l = 0; l < L; l++) {
        const p = `encoder.layers.${l}.`;
        const q = project(W, p, "self_attn.w_q", x, n, d);
        const k = project(W, p, "self_attn.w_k", x, n, d);
        const v = project(W, p, "self_attn.w_v", x, n, d);
        const a = attention(q, k, v, n, n, d, h, false).out;
        const o = project(W, p, "self_attn.w_o", a, n, d);
        x = addNorm(x, o, n, d, W[p + "sub1.norm.weight"], W[p + "sub1.norm.bias"]);
        x = addNorm(x, ffn(W, p + "ffn.", x, n, d, dff), n, d,
          W[p + "sub2.norm.weight"], W[p + "sub2.norm.bias"]);
      }
      const cross = [];
      for (let l = 0; l < L; l++) {
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
      for (let l = 0; l < this.cfg.num_layers; l++) {
        layers.push({ k: new Float32Array(0), v: new Float32Array(0) });
      }
      return { length: 0, layers };
    }

    // one decoder step: the token at position cache.length -> log p(next)
    // (V,) (PAD gets -inf) and the cross-attention weights [layer][head]
    // (S,); the cache grows by one position
    step(enc, cache, token) {
      const { d_model: d, num_heads: h, d_ff: dff, num_layers: L } = this.cfg;
      const W = this.W;
      const t = cache.length;
      let x = this.embed("tgt_embed", [token], t); // (1, d)
      const crossWeights = [];
      for (let l = 0; l < L; l++) {
        const p = `decoder.layers.${l}.`;
        const c = cache.layers[l];
        // masked self-attention: the new query sees the t cached + itself
        const q = project(W, p, "self_attn.w_q", x, 1, d);
        const k = new Float32Array((t + 1) * d);
        const v = new Float32Array((t + 1) * d);
        k.set(c.k);
        v.set(c.v);
        k.set(project(W, p, "self_attn.w_k", x, 1, d), t * d);
        v.set(project(W, p, "self_attn.w_v", x, 1, d), t * d);
        c.k = k;
        c.v = v;
        let a = attention(q, k, v, 1, t + 1, d, h, true).out;
        x = addNorm(x, project(W, p, "self_attn.w_o", a, 1, d), 1, d,
          W[p + "sub1.norm.weight"], W[p + "sub1.norm.bias"]);
        // cross-attention over the encoder memory (1, S)
        const qc = project(W, p, "cross_attn.w_q", x, 1, d);
        const cr = attention(qc, enc.cross[l].k, enc.cross[l].v, 1, enc.n, d, h, false);
        crossWeights.push(cr.weights);
        x = addNorm(x, project(W, p, "cross_attn.w_o", cr.out, 1, d), 1, d,
          W[p + "sub2.norm.weight"], W[p + "sub2.norm.bias"]);
        x = addNorm(x, ffn(W, p + "ffn.", x, 1, d, dff), 1, d,
          W[p + "sub3.norm.weight"], W[p + "sub3.norm.bias"]);
      }
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
      logp[this.cfg.pad_id] = -Infinity; // PAD is never a next token
      return { logp, crossWeights };
    }

    // a word -> source ids: its letters, then EOS (S,)
    source(word) {
      return [...word].map((ch) => this.letters.indexOf(ch)).concat(this.cfg.eos_id);
    }

    // the most probable phoneme at every step, up to len(word) + 15 of them
    // (utils.pronunciation.pronounce); attention[layer][head][step] (S,)
    greedy(word) {
      const { bos_id: bos, eos_id: eos, num_layers: L, num_heads: h } = this.cfg;
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
      const { pad_id: pad, bos_id: bos, eos_id: eos } = this.cfg;
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
      label: "输入一个英语单词（也可以是自造的词）：",
      placeholder: "例如 pronunciation",
      empty: "请输入一个单词：字母 a 到 z。",
      letters: "只接受字母 a 到 z（不要数字、空格、重音符号或其他文字）。",
      tooLong: (n) => `最多 ${n} 个字母：模型的位置编码只到这么长。`,
      greedy: "贪心解码",
      beam: "束搜索（束宽 4），最好的在前",
      score: "得分（对数概率）",
      truth: "词典中的读音（留出的测试词，训练时从未见过）：",
      right: "贪心解码的结果是其中之一",
      wrong: "贪心解码的结果不在其中",
      notTest: (n) => `不是留出的测试词：可能是训练词或自造的词（本页只附带 ${n} 个测试词的读音）。`,
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
        api.model = new Pronouncer(data);
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
    const maxLetters = data.config.max_len - 16; // len + 1 + 15 positions
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

  window.PronouncerModel = Pronouncer; // for tests and the curious

  function init() {
    document.querySelectorAll(".pronouncer-live").forEach(setup);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
