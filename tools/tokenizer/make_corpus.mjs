// Writes the hard strings the tokenizer goldens are computed over:
//   node make_corpus.mjs OUT.json
// Hand-picked cases first, then mixtures drawn from them with a fixed seed,
// so the file is the same on every run. Only characters assigned by Unicode
// 14 are used: PCRE2 10.42 (Debian 12) knows no later ones, while the
// JavaScript reference knows Unicode 15 and later (docs/tokenizer.md).
import fs from "node:fs";

const out = process.argv[2];
if (!out) {
  console.error("usage: node make_corpus.mjs OUT.json");
  process.exit(2);
}

const cases = [
  // empty and tiny
  "", " ", "a", "\n", "  ", "A", ".", "'",
  // English
  "Hello world", "Hello, world! How are you today?", "The quick brown fox jumps over the lazy dog.",
  "  leading spaces", "trailing spaces   ", "multiple   spaces   between   words",
  // contractions, cases and near misses
  "I'm here", "YOU'RE THERE", "We'Ve done it", "it's", "IT'S", "It'S", "they'll", "THEY'LL", "she'd", "SHE'D",
  "don't", "DON'T", "'s", "'S", "''s", "'ss", "x's y't z're", "the dog's bone's", "’s curly apostrophe", "O'Neil's",
  "rock'n'roll", "'twas", "ma'am", "y'all'd've",
  // numbers of many lengths
  "1", "12", "123", "1234", "12345", "123456", "1234567", "12345678901234567890",
  "3.14159", "1,000,000", "-42", "+7", "0x1F", "1e-9", "2024-05-01", "10:30pm", "$1,234.56", "50%",
  "٣٤٥ ١٢٣٤", "١٢٣٤٥٦٧", "１２３４", "²³¹", "ⅫⅣ", "๑๒๓", "१२३४५", "一二三", "v1.2.3-rc4",
  // whitespace runs and mixes
  "a\tb", "a\t\tb", "a\nb", "a\n\nb", "a\r\nb", "a\rb", "\r\n\r\n", " \n \n ", "\t \t \t", "a  \n  b",
  "line1\nline2\r\nline3\rline4", "x" + " ".repeat(40) + "y", " ".repeat(100), "\n".repeat(20), "\t".repeat(12),
  "end with newline\n", "end with spaces and newline  \n", "\n\n\nstart with newlines",
  // Unicode spaces: Oniguruma's \s is White_Space (U+0085 yes, U+180E and U+FEFF no)
  "a\u00a0b", "a\u3000b", "a\u2009b", "a\u2003b", "a\u202fb", "a\u205fb", "a\u1680b", "a\u0085b", "a\u2028b",
  "a\u2029b", "a\u180eb", "a\ufeffb", "\ufeffHello", "a\u000bb", "a\u000cb", "a \u00a0 b", "\u3000\u3000日本",
  // mixed scripts
  "Привет, мир!", "Γειά σου Κόσμε", "שלום עולם", "مرحبا بالعالم", "नमस्ते दुनिया", "สวัสดีชาวโลก",
  "안녕하세요 세계", "こんにちは世界", "你好，世界！", "Xin chào thế giới", "Merhaba dünya", "Cześć świecie",
  "ሰላም ልዑል", "გამარჯობა", "Բարեւ աշխարհ", "ជំរាបសួរ", "සුභ දවසක්", "ᏣᎳᎩ", "ᠮᠣᠩᠭᠣᠯ",
  "English中文日本語한국어العربيةעברית", "mixed123数字456и789", "abcабвαβγ", "العربية123English",
  "Ελληνικά'S", "ÀÉÎÕÜ àéîõü", "Ærøskøbing", "straße STRASSE", "İstanbul ıi", "ǅungla ǈudi",
  // CJK
  "我爱自然语言处理。", "東京都渋谷区", "한국어 자연어 처리", "中文，标点；符号：“引号”", "ｶﾀｶﾅ ﾊﾝｶｸ",
  "𠀀𠀁𠀂 extension B", "〇〡〢〣",
  // emoji: ZWJ sequences, skin tones, flags, keycaps, variation selectors
  "🙂", "🙂🙂🙂", "👍🏽", "👍🏿 👍🏻", "👨‍👩‍👧‍👦", "👩🏽‍💻", "🏳️‍🌈", "🇫🇷🇯🇵🇺🇸", "1️⃣#️⃣", "❤️", "❤\ufe0e",
  "🧑‍🤝‍🧑", "🫠🫡", "emoji🙂inside", "🙂 spaced 🙂", "👩‍❤️‍💋‍👨",
  // combining marks that NFC changes, and singletons
  "e\u0301", "cafe\u0301", "caf\u00e9", "A\u030a", "\u212b", "\u2126", "o\u0308\u0304", "o\u0304\u0308",
  "\u1100\u1161\u11a8", "\u1112\u1161\u11ab\u1100\u1173\u11af", "n\u0303a\u0303o\u0303", "e\u0301\u0301\u0301",
  "q\u0323\u0307", "q\u0307\u0323", "\u0301 leading mark", "x\u20dd", "nai\u0308vete\u0301", "naïveté",
  "NAI\u0308VETE\u0301", "\u00c5ngstr\u00f6m \u212bngstro\u0308m", "\u0958\u0959", "\u0915\u093c",
  "\ufb01nance \ufb02ow", "\u1e9b\u0323",
  // code
  "def f(x):\n    return x ** 2  # square\n", "int main() { return 0; }",
  "for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}", "{\"key\": [1, 2, 3], \"nested\": {\"a\": null}}",
  "<div class=\"x\">Hi &amp; bye</div>", "SELECT * FROM users WHERE id = 42;", "x=>x*2 ?? y?.z",
  "#!/bin/bash\necho \"$HOME\" | grep -v '^#'", "a->b::c<<d>>=e", "``` code ```", "~/path/to/file.txt",
  "https://example.com/path?q=1&r=2#frag", "user@example.com", "C:\\Windows\\System32",
  // special-token spellings, partial ones, and neighbours
  "<|begin_of_text|>", "<|begin_of_text|>Hello", "Hello<|end_of_text|>", "<|end_of_text|><|begin_of_text|>",
  "<|begin_of_text", "begin_of_text|>", "<|begin_of_text|", "|begin_of_text|>", "<<|begin_of_text|>>",
  "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>", "<|eot_id|><|eot_id|>", "<|eot_id |>",
  "<|s_0|>", "<|s_1|><|s_12|><|s_63|>", "<|s_64|>", "<|s_", "<|s_6|x", "text<|s_3|>text", "<|s_10|><|s_1|>0",
  "<|reserved_special_token_0|>", "<|reserved_special_token_2|>", "<|endoftext|>", "<|im_start|>user\nHi<|im_end|>",
  "<|im_start|", "<|im_start|><|im_start|>", "<|<|im_end|>|>", "<think>\nreasoning\n</think>\n\nanswer",
  "<tool_call>{\"a\":1}</tool_call>", "<|fim_prefix|>a<|fim_suffix|>b<|fim_middle|>", "<|endoftext", "<|vision_pad|>",
  "<|BEGIN_OF_TEXT|>", "< |begin_of_text| >",
  // invalid-looking but valid UTF-8
  "\ufffd", "a\ufffdb", "\ufffe\uffff", "\u{10ffff}", "\ue000\uf8ff", "\u{f0000}", "\u0000", "a\u0000b",
  "\u0001\u0002\u001b[31m", "\u007f", "\u0080\u0081\u009f", "\u200b\u200c\u200d", "\u200e\u200f",
  "\u2060\u2061", "\ufe0f", "\u{e0041}\u{e0042}", "\u00ad", "\u034f", "\u{1d400}\u{1d401}", "\u{1f3fb}",
  // long words (over the cache bound; the queue merge path)
  "a".repeat(300), "ab".repeat(150), "🙂".repeat(30), "9".repeat(100), "x".repeat(60) + " " + "y".repeat(60),
  "supercalifragilisticexpialidocious", "Pneumonoultramicroscopicsilicovolcanoconiosis",
  "!".repeat(50), "-".repeat(80), "=+".repeat(40), "。".repeat(20),
];

// A fixed-seed generator (mulberry32) for the mixtures.
let seed = 0x5eed1234;
function rand() {
  seed |= 0;
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (a) => a[Math.floor(rand() * a.length)];
const seps = [" ", "", "\n", "\t", "  ", "\r\n", ", ", ". ", "\u00a0", "\u3000", "'s ", "'LL "];
const pool = cases.filter((c) => c.length > 0 && c.length < 80);
const mixed = [];
for (let i = 0; i < 150; ++i) {
  const n = 2 + Math.floor(rand() * 5);
  let s = "";
  for (let k = 0; k < n; ++k) s += (k ? pick(seps) : "") + pick(pool);
  mixed.push(s);
}

const all = [...new Set([...cases, ...mixed])];
fs.writeFileSync(out, JSON.stringify(all, null, 1).replace(/\n /g, "\n") + "\n");
console.log(`${all.length} strings -> ${out}`);
