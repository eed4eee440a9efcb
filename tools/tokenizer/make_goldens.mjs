// Computes the tokenizer goldens with the JavaScript reference:
//   node make_goldens.mjs NPM_DIR DATA_DIR
// For each test tokenizer in DATA_DIR (llama3-mini, qwen2-mini) and each
// string of DATA_DIR/corpus.json: the ids with and without the special tokens
// the post-processor adds, and the decoded text of those ids with and
// without skipping special tokens. Then id sequences drawn with a fixed seed
// (mostly single-byte tokens, so that many are not whole UTF-8 characters)
// and their decoded text. Also the expected outputs of the mstar-tokenize
// tests in DATA_DIR/cli.
import fs from "node:fs";
import path from "node:path";
import { decode, loadReference, openTokenizer, readJson } from "./reference.mjs";

const [npmDir, dataDir] = process.argv.slice(2);
if (!npmDir || !dataDir) {
  console.error("usage: node make_goldens.mjs NPM_DIR DATA_DIR");
  process.exit(2);
}
const lib = await loadReference(npmDir);
const version = readJson(path.join(npmDir, "node_modules/@huggingface/tokenizers/package.json")).version;
const corpus = readJson(path.join(dataDir, "corpus.json"));

let seed = 0x0dec0de5;
function rand() {
  seed |= 0;
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

for (const name of ["llama3-mini", "qwen2-mini"]) {
  const dir = path.join(dataDir, name);
  const tok = openTokenizer(lib, dir);
  const json = readJson(path.join(dir, "tokenizer.json"));
  const modelSize = Object.keys(json.model.vocab).length;
  const addedIds = json.added_tokens.map((a) => a.id);

  const lines = [];
  for (const text of corpus) {
    const ids = tok.encode(text).ids;
    const plain = tok.encode(text, { add_special_tokens: false }).ids;
    lines.push(JSON.stringify({
      text, ids, ids_no_special: plain, decoded: decode(tok, ids, false), decoded_skip_special: decode(tok, ids, true),
    }));
  }
  const decodeLines = [];
  for (let i = 0; i < 80; ++i) {
    const n = 1 + Math.floor(rand() * 12);
    const ids = [];
    for (let k = 0; k < n; ++k) {
      const r = rand();
      ids.push(r < 0.6 ? Math.floor(rand() * 256) : r < 0.9 ? Math.floor(rand() * modelSize) : addedIds[Math.floor(rand() * addedIds.length)]);
    }
    decodeLines.push(JSON.stringify({ ids, decoded: decode(tok, ids, false), decoded_skip_special: decode(tok, ids, true) }));
  }
  const file = path.join(dataDir, "goldens", `${name}.json`);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, [
    "{",
    `"generator": ${JSON.stringify(`@huggingface/tokenizers ${version} (tools/tokenizer/make_goldens.mjs)`)},`,
    `"tokenizer": ${JSON.stringify(name)},`,
    `"cases": [\n${lines.join(",\n")}\n],`,
    `"decode_cases": [\n${decodeLines.join(",\n")}\n]`,
    "}",
  ].join("\n") + "\n");
  console.log(`${file}: ${lines.length} strings, ${decodeLines.length} id sequences`);

  // mstar-tokenize prints ids as a compact JSON array and a newline.
  const sample = fs.readFileSync(path.join(dataDir, "cli/sample.txt"), "utf8");
  const ids = tok.encode(sample).ids;
  fs.writeFileSync(path.join(dataDir, `cli/sample.${name}.ids.json`), JSON.stringify(ids) + "\n");
  fs.writeFileSync(path.join(dataDir, `cli/sample.${name}.no-special.ids.json`),
    JSON.stringify(tok.encode(sample, { add_special_tokens: false }).ids) + "\n");
  fs.writeFileSync(path.join(dataDir, `cli/sample.${name}.decoded.txt`), decode(tok, ids, false));
  fs.writeFileSync(path.join(dataDir, `cli/sample.${name}.decoded-skip.txt`), decode(tok, ids, true));
  const jsonl = fs.readFileSync(path.join(dataDir, "cli/lines.jsonl"), "utf8").split("\n").filter((l) => l.length);
  fs.writeFileSync(path.join(dataDir, `cli/lines.${name}.ids.jsonl`),
    jsonl.map((l) => JSON.stringify(tok.encode(JSON.parse(l)).ids) + "\n").join(""));
}
