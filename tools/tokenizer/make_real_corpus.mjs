// Writes the larger corpus check-real.sh and bench.sh run over, as JSON
// lines (one string each), deterministically:
//   node make_real_corpus.mjs OUT_DIR
// OUT_DIR/corpus.jsonl: paragraphs of /usr/share/common-licenses and of man
//   pages (every language installed, read in sorted order up to a byte
//   budget), then generated mixed-script text.
// OUT_DIR/prose.txt: English prose (the licenses), for throughput.
// OUT_DIR/mixed.txt: the generated mixed text, for throughput.
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";

const outDir = process.argv[2];
if (!outDir) {
  console.error("usage: node make_real_corpus.mjs OUT_DIR");
  process.exit(2);
}
fs.mkdirSync(outDir, { recursive: true });

function walk(dir, out = []) {
  let entries = [];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) walk(p, out);
    else if (e.isFile()) out.push(p);
  }
  return out;
}

function paragraphs(text) {
  return text.split(/\n\s*\n/).filter((p) => p.trim().length > 0);
}

const strings = [];
let prose = "";
for (const f of walk("/usr/share/common-licenses")) {
  const t = fs.readFileSync(f, "utf8");
  prose += t + "\n";
  strings.push(...paragraphs(t));
}

// Man pages: every 7th file of the sorted list, until 2.5 million characters.
const decoder = new TextDecoder("utf-8", { fatal: true });
let manBytes = 0;
const man = walk("/usr/share/man").filter((f) => f.endsWith(".gz"));
for (let i = 0; i < man.length && manBytes < 2_500_000; i += 7) {
  let t;
  try {
    t = decoder.decode(zlib.gunzipSync(fs.readFileSync(man[i])));
  } catch {
    continue;  // not gzip, or not UTF-8
  }
  manBytes += t.length;
  strings.push(...paragraphs(t));
}

// Generated mixed text (a fixed-seed mulberry32).
let seed = 0x7e57c0de;
function rand() {
  seed |= 0;
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (a) => a[Math.floor(rand() * a.length)];
const words = [
  "the", "The", "THE", "tokenizer", "streaming", "speech", "model", "café", "cafe\u0301", "naïve", "Straße", "İstanbul",
  "Привет", "мир", "Γειά", "κόσμε", "שלום", "עולם", "مرحبا", "بالعالم", "नमस्ते", "दुनिया", "สวัสดี", "안녕하세요",
  "세계", "こんにちは", "世界", "你好", "自然语言处理", "東京", "Xin", "chào", "Ærøskøbing", "ǅungla", "ﬁnance",
  "\u212bngstr\u00f6m", "\u1100\u1161\u11a8", "o\u0308\u0304", "q\u0307\u0323", "x\u20dd", "𠀀𠀁", "ｶﾀｶﾅ",
];
const emoji = ["🙂", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇫🇷", "1️⃣", "❤️", "🫠", "👩🏽‍💻", "🧑‍🤝‍🧑"];
const spaces = [" ", " ", " ", "  ", "\t", "\n", "\r\n", "\n\n", "\u00a0", "\u3000", "\u2009", "\u0085", " \n ", "   "];
const punct = [".", ",", "!", "?", ";", ":", "…", "—", "“", "”", "«", "»", "(", ")", "[", "]", "{", "}", "<", ">", "'", "\""];
const contractions = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'VE", "'M", "'LL", "'D", "n't", "N'T"];
const specials = [
  "<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>",
  "<|reserved_special_token_5|>", "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>",
  "<tool_call>", "<|fim_prefix|>", "<|begin_of_text", "<|im_start", "im_end|>", "<|", "|>",
];
function number() {
  const n = 1 + Math.floor(rand() * 14);
  let s = "";
  for (let i = 0; i < n; ++i) s += String.fromCharCode(48 + Math.floor(rand() * 10));
  return pick(["", "", "", "-", "$", "#"]) + s + pick(["", "", "", ".5", ",000", "%", "px"]);
}
let mixed = "";
for (let line = 0; line < 9000; ++line) {
  let s = "";
  const n = 3 + Math.floor(rand() * 30);
  for (let k = 0; k < n; ++k) {
    const r = rand();
    if (k) s += r < 0.05 ? "" : pick(spaces);
    const q = rand();
    s += q < 0.55 ? pick(words) : q < 0.65 ? pick(emoji) : q < 0.75 ? number() : q < 0.85 ? pick(punct) : q < 0.93 ? pick(words) + pick(contractions) : pick(specials);
  }
  strings.push(s);
  mixed += s + "\n";
}

fs.writeFileSync(path.join(outDir, "corpus.jsonl"), strings.map((s) => JSON.stringify(s)).join("\n") + "\n");
fs.writeFileSync(path.join(outDir, "prose.txt"), prose);
fs.writeFileSync(path.join(outDir, "mixed.txt"), mixed);
const bytes = strings.reduce((a, s) => a + Buffer.byteLength(s), 0);
console.log(`${strings.length} strings, ${(bytes / 1e6).toFixed(2)} MB -> ${outDir}/corpus.jsonl`);
