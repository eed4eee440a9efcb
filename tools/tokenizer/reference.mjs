// The JavaScript reference, loaded from the scratch folder npm-scratch.sh
// installs into: @huggingface/tokenizers (the implementation Transformers.js
// uses), which translates the Oniguruma patterns of tokenizer.json into
// JavaScript regular expressions.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

export async function loadReference(npmDir) {
  const entry = path.join(npmDir, "node_modules/@huggingface/tokenizers/dist/tokenizers.mjs");
  return import(pathToFileURL(entry).href);
}

export function readJson(file) {
  return JSON.parse(fs.readFileSync(file, "utf8"));
}

// A tokenizer directory (tokenizer.json, tokenizer_config.json) as the
// reference's Tokenizer.
export function openTokenizer(lib, dir) {
  const config = fs.existsSync(path.join(dir, "tokenizer_config.json"))
    ? readJson(path.join(dir, "tokenizer_config.json"))
    : {};
  return new lib.Tokenizer(readJson(path.join(dir, "tokenizer.json")), config);
}

// What the Rust library's decode returns: no clean-up of spaces (that is a
// transformers option, on by default in the JavaScript library), and
// nothing for no ids (the JavaScript library refuses an empty list).
export function decode(tok, ids, skipSpecial) {
  if (ids.length === 0) return "";
  return tok.decode(ids, { skip_special_tokens: skipSpecial, clean_up_tokenization_spaces: false });
}
