// The JavaScript reference's encode throughput over a file, measured the way
// mstar-tokenize --bench measures its own: the whole file as one text, one
// untimed pass to warm the caches, then the median of timed passes.
//   node bench.mjs NPM_DIR MODEL_DIR FILE PASSES
import fs from "node:fs";
import { loadReference, openTokenizer } from "./reference.mjs";

const [npmDir, model, file, passesArg] = process.argv.slice(2);
if (!npmDir || !model || !file) {
  console.error("usage: node bench.mjs NPM_DIR MODEL_DIR FILE [PASSES]");
  process.exit(2);
}
const passes = Number(passesArg ?? 5);
const lib = await loadReference(npmDir);
const tok = openTokenizer(lib, model);
const text = fs.readFileSync(file, "utf8");
const bytes = Buffer.byteLength(text);
let tokens = tok.encode(text).ids.length;
const secs = [];
for (let p = 0; p < passes; ++p) {
  const t0 = process.hrtime.bigint();
  tokens = tok.encode(text).ids.length;
  secs.push(Number(process.hrtime.bigint() - t0) / 1e9);
}
secs.sort((a, b) => a - b);
const median = secs[Math.floor(secs.length / 2)];
console.log(`${file}: ${bytes} bytes, ${tokens} tokens, encode ${(bytes / 1e6 / median).toFixed(2)} MB/s ` +
  `(median of ${passes} passes, ${(median * 1e3).toFixed(1)} ms each)`);
