// Trains small tokenizer.json files of each kind with Hugging Face tokenizers (the reference
// implementation, Node bindings 0.23.2) and writes what it encodes and decodes as goldens for
// the C++ tests: tests/golden/tokenizers/. Usage: npm install && node make_goldens.js
// (needs /work/shared/data, i.e. ../shared/data beside the repository, and spm_train from
// Debian's `sentencepiece` package for the Precompiled normalizer's charsmap).
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const crypto = require('crypto');
const { execFileSync } = require('child_process');
const tk = require('tokenizers');

const repo = path.resolve(__dirname, '..', '..');
const data = path.resolve(repo, '..', 'shared', 'data');
const out = path.join(repo, 'tests', 'golden', 'tokenizers');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rota-goldens-'));
fs.mkdirSync(out, { recursive: true });

const shakespeare = path.join(data, 'tinyshakespeare', 'input.txt');
const corpora = {
  'wikitext-2/train.txt': path.join(data, 'wikitext-2', 'train.txt'),
  'wikitext-2/valid.txt': path.join(data, 'wikitext-2', 'valid.txt'),
  'wikitext-2/test.txt': path.join(data, 'wikitext-2', 'test.txt'),
  'tinyshakespeare/input.txt': shakespeare,
  'sst-2/dev.tsv': path.join(data, 'sst-2', 'dev.tsv'),
};

// Text the corpora lack: accents (composed and combining), CJK, emoji with ZWJ, RTL, Cyrillic,
// control characters, tabs, CRLF, NBSP and other spaces, special-token strings.
const stress = [
  'Café naïve résumé — cafe\u0301 nai\u0308ve ÅNGSTRÖM ǅ ﬁ ﬀ ① ²³ ½ Ⅻ',
  '東京は日本の首都です。中文字符测试，标点！𠀋𪚲',
  'Family: 👨\u200d👩\u200d👧\u200d👦 flag: 🇫🇷 skin: 👍🏽 heart: ❤\ufe0f',
  'עברית: שלום עולם! العربية: مرحبا بالعالم. فارسی ۱۲۳',
  'Русский текст: Съешь же ещё этих мягких французских булок. ΣΊΣΥΦΟΣ σίσυφος İstanbul',
  'tabs\there\t\tand  double  spaces   triple',
  'crlf line\r',
  'nbsp\u00a0here thin\u2009space ideographic\u3000space em\u2003space nel\u0085end zwsp\u200bx',
  'controls \u0001\u0002\u0007\u001b[0m\u007f bidi \u202eevil\u202c soft\u00adhyphen',
  'specials: <|endoftext|> [CLS] [SEP] [MASK] <mask> <s> </s> <unk> [UNK] <pad> <|begin_of_text|>',
  'joined<|endoftext|>tokens[MASK]here<mask>x and  <mask>  spaced',
  "Don't you're I'm he'll we've it'd 'S 'T 1234567 3.14159 1,000,000 @-@ x² 10%",
  '   leading spaces and trailing   ',
  '',
  '\t',
  'email me@example.com url https://example.com/a?b=c#d (brackets) [square] {curly} «guillemets» „quotes“',
  'combining: a\u0300\u0301\u0302 e\u0327\u0306 Z\u0351\u0352\u0353 hangul 한국어 ᄒ\u1161\u11ab jamo',
  'math: ∑∫√∞ ≤≥≠ ⊂⊃ arrows ←→ box ┌─┐ braille ⠁⠃ dingbats ✓✗ private \ue000',
  'added [R]   after, a word, words, sword, word-play, [R]\t<mask>end 2024-11-26 12345',
  '<s>Hello at the start</s>',
  '<mask> starts this line [CLS][SEP]',
  '  <|endoftext|>  two spaces before',
  '     ',
  '\r',
  '<|endoftext|>',
  '[MASK]',
  'Antidisestablishmentarianism' + 'x'.repeat(90) + ' supercalifragilisticexpialidocious',
  'digits 12345678901234567890 !!!???... ’s ’S ‘quoted’ ... — –– ---',
  'mixed\ttabs \t\t and\u000bvertical\u000cfeed\u2028line\u2029para',
  'newer emoji \u{1FAE0}\u{1FABF} unassigned \u0378\u{50000} tag \u{E0001} surrogate-free \u{10FFFD} ligature ǆ Ǳ',
].join('\n') + '\nno final newline';
fs.writeFileSync(path.join(out, 'stress.txt'), stress);

const sha256 = (ids) => crypto.createHash('sha256').update(Buffer.from(new Uint32Array(ids).buffer)).digest('hex');
const lines = (text) => text.split(/(?<=\n)/).filter((l) => l.length > 0);

function load(json) { return tk.Tokenizer.fromString(JSON.stringify(json)); }

// ---- training helpers -------------------------------------------------------------------
function train(model, setup, files) {
  const t = new tk.Tokenizer(model);
  setup(t);
  t.train(files);
  const file = path.join(tmp, 'trained.json');
  t.save(file);
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}

function byteLevelChars() {
  const chars = [];
  let n = 0;
  for (let b = 0; b < 256; ++b) {
    const printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
    chars.push(String.fromCodePoint(printable ? b : 256 + n++));
  }
  return chars;
}

// A byte-level BPE of `size` tokens: the 256 byte characters, then the trained merges in order.
function byteLevelBpe(size) {
  const trained = train(tk.BPE.empty(), (t) => t.setPreTokenizer(tk.byteLevelPreTokenizer(false, true)), [shakespeare]);
  const vocab = {};
  byteLevelChars().forEach((c, i) => { vocab[c] = i; });
  const merges = [];
  for (const m of trained.model.merges) {
    const [a, b] = Array.isArray(m) ? m : m.split(' ');
    if (Object.keys(vocab).length >= size) break;
    if (!(a in vocab) || !(b in vocab)) continue;
    merges.push([a, b]);
    if (!((a + b) in vocab)) vocab[a + b] = Object.keys(vocab).length;
  }
  return { vocab, merges };
}

function added(id, content, special = true, extra = {}) {
  return Object.assign({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: !special, special }, extra);
}

function doc(parts) {
  return Object.assign({ version: '1.0', truncation: null, padding: null, added_tokens: [], normalizer: null,
    pre_tokenizer: null, post_processor: null, decoder: null }, parts);
}

// ---- the tokenizers ----------------------------------------------------------------------
const tokenizers = {};

const gpt2 = byteLevelBpe(3000);
const gpt2Size = Object.keys(gpt2.vocab).length;
tokenizers['gpt2_bpe'] = doc({
  added_tokens: [added(gpt2Size, '<|endoftext|>')],
  pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
  post_processor: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
  decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
  model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null,
    fuse_unk: false, byte_fallback: false, ignore_merges: false, vocab: gpt2.vocab, merges: gpt2.merges },
});

const llama3Pattern = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
tokenizers['llama3_bpe'] = doc({
  added_tokens: [added(gpt2Size, '<|begin_of_text|>'), added(gpt2Size + 1, '<|end_of_text|>'),
    added(gpt2Size + 2, '<mask>', true, { lstrip: true })],
  normalizer: null,
  pre_tokenizer: { type: 'Sequence', pretokenizers: [
    { type: 'Split', pattern: { Regex: llama3Pattern }, behavior: 'Isolated', invert: false },
    { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false }] },
  post_processor: { type: 'TemplateProcessing',
    single: [{ SpecialToken: { id: '<|begin_of_text|>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
    pair: [{ SpecialToken: { id: '<|begin_of_text|>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } },
      { SpecialToken: { id: '<|begin_of_text|>', type_id: 1 } }, { Sequence: { id: 'B', type_id: 1 } }],
    special_tokens: { '<|begin_of_text|>': { id: '<|begin_of_text|>', ids: [gpt2Size], tokens: ['<|begin_of_text|>'] } } },
  decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
  model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null,
    fuse_unk: false, byte_fallback: false, ignore_merges: true, vocab: gpt2.vocab, merges: gpt2.merges },
});

// WordPiece, BERT style.
{
  const trained = train(tk.WordPiece.empty(), (t) => { t.setNormalizer(tk.bertNormalizer({ lowercase: true })); t.setPreTokenizer(tk.bertPreTokenizer()); }, [shakespeare]);
  const specials = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'];
  const vocab = {};
  specials.forEach((s, i) => { vocab[s] = i; });
  const entries = Object.entries(trained.model.vocab).sort((a, b) => a[1] - b[1]);
  for (const [token] of entries) {
    if (Object.keys(vocab).length >= 3000) break;
    if (!(token in vocab)) vocab[token] = Object.keys(vocab).length;
  }
  tokenizers['bert_wordpiece'] = doc({
    added_tokens: specials.map((s, i) => added(i, s)),
    normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: { type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '[CLS]', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '[SEP]', type_id: 0 } }],
      pair: [{ SpecialToken: { id: '[CLS]', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '[SEP]', type_id: 0 } },
        { Sequence: { id: 'B', type_id: 1 } }, { SpecialToken: { id: '[SEP]', type_id: 1 } }],
      special_tokens: { '[CLS]': { id: '[CLS]', ids: [2], tokens: ['[CLS]'] }, '[SEP]': { id: '[SEP]', ids: [3], tokens: ['[SEP]'] } } },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: { type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 100, vocab },
  });
}

// Unigram with Metaspace (ALBERT/T5 style pre-tokenization), <unk> at 0 and byte fallback.
{
  const trained = train(tk.Unigram.empty(), (t) => t.setPreTokenizer(tk.metaspacePreTokenizer('▁', 'always', true)), [shakespeare]);
  const vocab = [['<unk>', 0.0], ['<s>', 0.0], ['</s>', 0.0], ['<mask>', 0.0]];
  for (let b = 0; b < 256; ++b) vocab.push(['<0x' + b.toString(16).toUpperCase().padStart(2, '0') + '>', 0.0]);
  const seen = new Set(vocab.map((v) => v[0]));
  for (const [piece, score] of trained.model.vocab) {
    if (vocab.length >= 3000) break;
    if (!seen.has(piece)) { vocab.push([piece, score]); seen.add(piece); }
  }
  tokenizers['unigram_metaspace'] = doc({
    added_tokens: [added(0, '<unk>'), added(1, '<s>'), added(2, '</s>'), added(3, '<mask>', true, { lstrip: true, rstrip: false })],
    normalizer: { type: 'Sequence', normalizers: [{ type: 'NFKC' }, { type: 'Replace', pattern: { Regex: ' {2,}' }, content: ' ' }] },
    pre_tokenizer: { type: 'Metaspace', replacement: '▁', prepend_scheme: 'first', split: true },
    post_processor: { type: 'TemplateProcessing',
      single: [{ Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '</s>', type_id: 0 } }],
      pair: [{ Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '</s>', type_id: 0 } }, { Sequence: { id: 'B', type_id: 1 } }, { SpecialToken: { id: '</s>', type_id: 1 } }],
      special_tokens: { '</s>': { id: '</s>', ids: [2], tokens: ['</s>'] } } },
    decoder: { type: 'Sequence', decoders: [{ type: 'Replace', pattern: { String: '▁' }, content: ' ' }, { type: 'ByteFallback' }, { type: 'Fuse' }, { type: 'Strip', content: ' ', start: 1, stop: 0 }] },
    model: { type: 'Unigram', unk_id: 0, vocab, byte_fallback: true },
  });
}

// Unigram from a SentencePiece model (nmt_nfkc): the Precompiled normalizer with its charsmap.
{
  const prefix = path.join(tmp, 'spm');
  execFileSync('spm_train', [`--input=${shakespeare}`, `--model_prefix=${prefix}`, '--vocab_size=2000', '--model_type=unigram',
    '--normalization_rule_name=nmt_nfkc', '--character_coverage=1.0', '--minloglevel=2', '--num_threads=2'], { stdio: 'ignore' });
  const model = fs.readFileSync(prefix + '.model');
  // Minimal protobuf reading: ModelProto.pieces (1) {piece (1), score (2), type (3)},
  // normalizer_spec (3) {precompiled_charsmap (2)}.
  function* fields(buf) {
    let pos = 0;
    const varint = () => { let v = 0n, s = 0n; for (;;) { const b = buf[pos++]; v |= BigInt(b & 0x7f) << s; if (!(b & 0x80)) return v; s += 7n; } };
    while (pos < buf.length) {
      const key = Number(varint()); const field = key >> 3, wire = key & 7;
      if (wire === 0) yield [field, varint()];
      else if (wire === 2) { const n = Number(varint()); yield [field, buf.subarray(pos, pos + n)]; pos += n; }
      else if (wire === 5) { yield [field, buf.readFloatLE(pos)]; pos += 4; }
      else if (wire === 1) { pos += 8; }
      else throw new Error('wire type ' + wire);
    }
  }
  const vocab = []; let unk = 0; let charsmap = Buffer.alloc(0);
  for (const [f, v] of fields(model)) {
    if (f === 1) {
      let piece = '', score = 0, type = 1;
      for (const [g, w] of fields(v)) { if (g === 1) piece = w.toString('utf8'); if (g === 2) score = w; if (g === 3) type = Number(w); }
      if (type === 2) unk = vocab.length;
      vocab.push([piece, score]);
    } else if (f === 3) {
      for (const [g, w] of fields(v)) if (g === 2) charsmap = Buffer.from(w);
    }
  }
  tokenizers['spm_precompiled_unigram'] = doc({
    added_tokens: [added(0, vocab[0][0]), added(1, vocab[1][0]), added(2, vocab[2][0])],
    normalizer: { type: 'Sequence', normalizers: [{ type: 'Precompiled', precompiled_charsmap: charsmap.toString('base64') },
      { type: 'Replace', pattern: { Regex: ' {2,}' }, content: ' ' }] },
    pre_tokenizer: { type: 'Metaspace', replacement: '▁', prepend_scheme: 'always', split: true },
    decoder: { type: 'Metaspace', replacement: '▁', prepend_scheme: 'always', split: true },
    model: { type: 'Unigram', unk_id: unk, vocab, byte_fallback: false },
  });
}

// WordLevel with the remaining normalizers and pre-tokenizers.
{
  const trained = train(tk.WordLevel.empty(), (t) => { t.setPreTokenizer(tk.whitespacePreTokenizer()); }, [shakespeare]);
  const vocab = { '[UNK]': 0 };
  for (const [token] of Object.entries(trained.model.vocab).sort((a, b) => a[1] - b[1])) {
    if (Object.keys(vocab).length >= 4000) break;
    const lower = token.toLowerCase();
    if (!(lower in vocab)) vocab[lower] = Object.keys(vocab).length;
  }
  for (const d of '0123456789') if (!(d in vocab)) vocab[d] = Object.keys(vocab).length;
  tokenizers['wordlevel_variants'] = doc({
    added_tokens: [added(0, '[UNK]'), added(Object.keys(vocab).length, 'dont', false, { single_word: true })],
    normalizer: { type: 'Sequence', normalizers: [{ type: 'NFKD' }, { type: 'StripAccents' }, { type: 'Lowercase' }, { type: 'Strip', strip_left: true, strip_right: true },
      { type: 'Replace', pattern: { String: "'" }, content: '' }, { type: 'NFC' }] },
    pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'WhitespaceSplit' }, { type: 'Digits', individual_digits: true },
      { type: 'Punctuation', behavior: 'Contiguous' }, { type: 'Whitespace' }] },
    post_processor: { type: 'BertProcessing', sep: ['[UNK]', 0], cls: ['[UNK]', 0] },
    decoder: null,
    model: { type: 'WordLevel', vocab, unk_token: '[UNK]' },
  });
}

// Cased BERT: the WordPiece vocabulary with a BertNormalizer that keeps case and accents.
tokenizers['bert_cased_variant'] = Object.assign({}, tokenizers['bert_wordpiece'], {
  normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: false, strip_accents: false, lowercase: false },
  decoder: { type: 'WordPiece', prefix: '##', cleanup: false },
});

// A small BPE trainer of our own, for the options the reference's default trainer does not
// set: continuing_subword_prefix, end_of_word_suffix.
function trainSubwordBpe(words, merges, prefix, suffix) {
  const counts = new Map();
  for (const w of words) counts.set(w, (counts.get(w) || 0) + 1);
  const split = [...counts.keys()].map((w) => {
    const chars = [...w];
    return chars.map((c, i) => (i > 0 ? prefix : '') + c + (i === chars.length - 1 ? suffix : ''));
  });
  const freq = [...counts.values()];
  const vocab = new Set(split.flat());
  const result = [];
  for (let m = 0; m < merges; ++m) {
    const pairs = new Map();
    split.forEach((s, k) => { for (let i = 0; i + 1 < s.length; ++i) { const key = s[i] + '\u0000' + s[i + 1]; pairs.set(key, (pairs.get(key) || 0) + freq[k]); } });
    let best = null, bestCount = 0;
    for (const [key, c] of pairs) if (c > bestCount) { best = key; bestCount = c; }
    if (!best) break;
    const [a, b] = best.split('\u0000');
    const joined = a + (b.startsWith(prefix) ? b.slice(prefix.length) : b);
    result.push([a, b]);
    vocab.add(joined);
    split.forEach((s) => { for (let i = 0; i + 1 < s.length; ++i) if (s[i] === a && s[i + 1] === b) { s.splice(i, 2, joined); } });
  }
  return { vocab: [...vocab], merges: result };
}

// BPE with a continuation prefix, an end-of-word suffix, <unk> (fused) and byte fallback for
// ASCII bytes only (so other unknown characters become <unk>); Split with invert.
{
  const text = fs.readFileSync(shakespeare, 'utf8');
  const words = text.split(/\s+/).filter((w) => w.length > 0).slice(0, 60000).flatMap((w) => w.split(/(?=[^\w])|(?<=[^\w])/));
  const trained = trainSubwordBpe(words, 400, '##', '</w>');
  const vocab = { '<unk>': 0 };
  for (let b = 0; b < 128; ++b) vocab['<0x' + b.toString(16).toUpperCase().padStart(2, '0') + '>'] = Object.keys(vocab).length;
  for (const t of trained.vocab) if (!(t in vocab)) vocab[t] = Object.keys(vocab).length;
  tokenizers['bpe_subword_unk'] = doc({
    added_tokens: [added(0, '<unk>')],
    normalizer: { type: 'Sequence', normalizers: [{ type: 'NFD' }, { type: 'BertNormalizer', clean_text: false, handle_chinese_chars: true, strip_accents: false, lowercase: false }] },
    pre_tokenizer: { type: 'Sequence', pretokenizers: [
      { type: 'Split', pattern: { Regex: '\\w+|[^\\w\\s]+' }, behavior: 'Removed', invert: true },
      { type: 'Split', pattern: { String: '-' }, behavior: 'MergedWithNext', invert: false },
      { type: 'Punctuation', behavior: 'MergedWithPrevious' }] },
    decoder: { type: 'Sequence', decoders: [{ type: 'ByteFallback' }, { type: 'Replace', pattern: { String: '##' }, content: '' }, { type: 'BPEDecoder', suffix: '</w>' }] },
    model: { type: 'BPE', dropout: null, unk_token: '<unk>', continuing_subword_prefix: '##', end_of_word_suffix: '</w>',
      fuse_unk: true, byte_fallback: true, ignore_merges: false, vocab, merges: trained.merges },
  });
}

// Llama-2 style: no pre-tokenizer, Prepend + Replace normalizer, BPE with byte fallback.
{
  const trained = train(tk.BPE.empty(), (t) => t.setNormalizer(tk.sequenceNormalizer([tk.prependNormalizer('▁'), tk.replace(' ', '▁')])),
    [path.join(data, 'sst-2', 'dev.tsv')]);
  const vocab = { '<unk>': 0, '<s>': 1, '</s>': 2 };
  for (let b = 0; b < 256; ++b) vocab['<0x' + b.toString(16).toUpperCase().padStart(2, '0') + '>'] = Object.keys(vocab).length;
  const merges = [];
  const alphabet = Object.entries(trained.model.vocab).sort((a, b) => a[1] - b[1]).map((e) => e[0]).filter((t) => [...t].length === 1);
  for (const c of alphabet) if (!(c in vocab)) vocab[c] = Object.keys(vocab).length;
  for (const m of trained.model.merges) {
    const [a, b] = Array.isArray(m) ? m : m.split(' ');
    if (Object.keys(vocab).length >= 2500) break;
    if (!(a in vocab) || !(b in vocab)) continue;
    merges.push([a, b]);
    if (!((a + b) in vocab)) vocab[a + b] = Object.keys(vocab).length;
  }
  tokenizers['llama2_bpe'] = doc({
    added_tokens: [added(0, '<unk>'), added(1, '<s>'), added(2, '</s>')],
    normalizer: { type: 'Sequence', normalizers: [{ type: 'Prepend', prepend: '▁' }, { type: 'Replace', pattern: { String: ' ' }, content: '▁' }] },
    pre_tokenizer: null,
    post_processor: { type: 'TemplateProcessing', single: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
      pair: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '<s>', type_id: 1 } }, { Sequence: { id: 'B', type_id: 1 } }],
      special_tokens: { '<s>': { id: '<s>', ids: [1], tokens: ['<s>'] } } },
    decoder: { type: 'Sequence', decoders: [{ type: 'Replace', pattern: { String: '▁' }, content: ' ' }, { type: 'ByteFallback' }, { type: 'Fuse' }, { type: 'Strip', content: ' ', start: 1, stop: 0 }] },
    model: { type: 'BPE', dropout: null, unk_token: '<unk>', continuing_subword_prefix: null, end_of_word_suffix: null,
      fuse_unk: true, byte_fallback: true, ignore_merges: false, vocab, merges },
  });
}

// Metaspace without prepending or splitting, over the Unigram vocabulary.
tokenizers['unigram_metaspace_never'] = Object.assign({}, tokenizers['unigram_metaspace'], {
  normalizer: { type: 'Sequence', normalizers: [{ type: 'NFKC' }, { type: 'Lowercase' }] },
  pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'WhitespaceSplit' }, { type: 'Metaspace', replacement: '▁', prepend_scheme: 'never', split: false }] },
  decoder: { type: 'Metaspace', replacement: '▁', prepend_scheme: 'never', split: false },
});

// RoBERTa style: ByteLevel with a prefix space after contiguous digit runs, <unk> in the BPE
// model (fuse_unk false), rstrip and single_word added tokens, RobertaProcessing.
{
  const vocab = Object.assign({}, gpt2.vocab);
  const extra = ['<s>', '<pad>', '</s>', '<unk>', '<mask>', '[R]', 'word'];
  const base = Object.keys(vocab).length;
  extra.forEach((t, i) => { vocab[t] = base + i; });
  tokenizers['roberta_bpe'] = doc({
    added_tokens: [added(base, '<s>'), added(base + 1, '<pad>'), added(base + 2, '</s>'), added(base + 3, '<unk>'),
      added(base + 4, '<mask>', true, { lstrip: true }), added(base + 5, '[R]', false, { rstrip: true, normalized: false }),
      added(base + 6, 'word', true, { single_word: true })],
    pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'Digits', individual_digits: false },
      { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true }] },
    post_processor: { type: 'RobertaProcessing', sep: ['</s>', base + 2], cls: ['<s>', base], trim_offsets: true, add_prefix_space: true },
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: { type: 'BPE', dropout: null, unk_token: '<unk>', continuing_subword_prefix: '', end_of_word_suffix: '',
      fuse_unk: false, byte_fallback: false, ignore_merges: false, vocab, merges: gpt2.merges },
  });
}

// ---- goldens -----------------------------------------------------------------------------
async function main() {
  const summary = {};
  for (const [name, json] of Object.entries(tokenizers)) fs.writeFileSync(path.join(out, name + '.json'), JSON.stringify(json));
  // Rota's own tokenizers exported as tokenizer.hf.json (written by the C++ test
  // rota_export_golden.cpp with ROTA_UPDATE_EXPORT_GOLDENS=1): the reference encodes them too.
  const exportDir = path.join(out, 'rota_export');
  if (fs.existsSync(exportDir)) {
    for (const file of fs.readdirSync(exportDir).sort()) {
      tokenizers['rota_export/' + path.basename(file, '.json')] = JSON.parse(fs.readFileSync(path.join(exportDir, file), 'utf8'));
    }
  }
  for (const [name, json] of Object.entries(tokenizers)) {
    const t = load(json);
    const entry = { corpora: {} };
    const encodeLines = async (text) => {
      const encodings = await t.encodeBatch(lines(text), { addSpecialTokens: false });
      return encodings.flatMap((e) => Array.from(e.getIds()));
    };
    for (const [corpus, file] of Object.entries(corpora)) {
      const ids = await encodeLines(fs.readFileSync(file, 'utf8'));
      entry.corpora[corpus] = { count: ids.length, sha256: sha256(ids) };
    }
    const stressLines = lines(stress);
    entry.stress = [];
    for (const line of stressLines) {
      const ids = Array.from((await t.encode(line, null, { addSpecialTokens: false })).getIds());
      entry.stress.push({ ids, decoded: await t.decode(ids, false) });
    }
    // A sample of WikiText-2 valid lines with their ids and decoding.
    const valid = lines(fs.readFileSync(corpora['wikitext-2/valid.txt'], 'utf8'));
    entry.sample = [];
    for (let i = 0; i < valid.length; i += 250) {
      const ids = Array.from((await t.encode(valid[i], null, { addSpecialTokens: false })).getIds());
      entry.sample.push({ line: i, ids, decoded: await t.decode(ids, false) });
    }
    summary[name] = entry;
    console.log(name, JSON.stringify(entry.corpora));
  }
  fs.writeFileSync(path.join(out, 'goldens.json'), JSON.stringify(summary) + '\n');
}

// Each normalizer and pre-tokenizer alone on the stress lines: the same component as a JSON
// config (what Rota parses) and as the reference's constructor.
function writeComponentGoldens() {
  const normalizers = [
    [{ type: 'NFC' }, tk.nfcNormalizer()],
    [{ type: 'NFD' }, tk.nfdNormalizer()],
    [{ type: 'NFKC' }, tk.nfkcNormalizer()],
    [{ type: 'NFKD' }, tk.nfkdNormalizer()],
    [{ type: 'Lowercase' }, tk.lowercase()],
    [{ type: 'StripAccents' }, tk.stripAccentsNormalizer()],
    [{ type: 'Sequence', normalizers: [{ type: 'NFD' }, { type: 'StripAccents' }] }, tk.sequenceNormalizer([tk.nfdNormalizer(), tk.stripAccentsNormalizer()])],
    [{ type: 'Strip', strip_left: true, strip_right: true }, tk.stripNormalizer(true, true)],
    [{ type: 'Strip', strip_left: false, strip_right: true }, tk.stripNormalizer(false, true)],
    [{ type: 'Strip', strip_left: true, strip_right: false }, tk.stripNormalizer(true, false)],
    [{ type: 'Prepend', prepend: '▁' }, tk.prependNormalizer('▁')],
    [{ type: 'Replace', pattern: { String: ' ' }, content: '▁' }, tk.replace(' ', '▁')],
    [{ type: 'Replace', pattern: { String: 'e' }, content: '' }, tk.replace('e', '')],
    [{ type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true }, tk.bertNormalizer({ cleanText: true, handleChineseChars: true, lowercase: true })],
    [{ type: 'BertNormalizer', clean_text: true, handle_chinese_chars: false, strip_accents: false, lowercase: false }, tk.bertNormalizer({ cleanText: true, handleChineseChars: false, stripAccents: false, lowercase: false })],
    [{ type: 'BertNormalizer', clean_text: false, handle_chinese_chars: true, strip_accents: true, lowercase: false }, tk.bertNormalizer({ cleanText: false, handleChineseChars: true, stripAccents: true, lowercase: false })],
    // The charsmap is that of spm_precompiled_unigram.json (the test reads it from there).
    [{ type: 'Precompiled', precompiled_charsmap: null, charsmap_of: 'spm_precompiled_unigram.json' },
      tk.precompiled(Array.from(Buffer.from(tokenizers['spm_precompiled_unigram'].normalizer.normalizers[0].precompiled_charsmap, 'base64')))],
  ];
  const preTokenizers = [
    [{ type: 'ByteLevel', add_prefix_space: true, use_regex: true }, tk.byteLevelPreTokenizer(true, true)],
    [{ type: 'ByteLevel', add_prefix_space: false, use_regex: true }, tk.byteLevelPreTokenizer(false, true)],
    [{ type: 'ByteLevel', add_prefix_space: false, use_regex: false }, tk.byteLevelPreTokenizer(false, false)],
    [{ type: 'Whitespace' }, tk.whitespacePreTokenizer()],
    [{ type: 'WhitespaceSplit' }, tk.whitespaceSplitPreTokenizer()],
    [{ type: 'BertPreTokenizer' }, tk.bertPreTokenizer()],
    [{ type: 'Metaspace', replacement: '▁', prepend_scheme: 'always', split: true }, tk.metaspacePreTokenizer('▁', 'always', true)],
    [{ type: 'Metaspace', replacement: '▁', prepend_scheme: 'first', split: true }, tk.metaspacePreTokenizer('▁', 'first', true)],
    [{ type: 'Metaspace', replacement: '_', prepend_scheme: 'never', split: false }, tk.metaspacePreTokenizer('_', 'never', false)],
    [{ type: 'Digits', individual_digits: true }, tk.digitsPreTokenizer(true)],
    [{ type: 'Digits', individual_digits: false }, tk.digitsPreTokenizer(false)],
  ];
  for (const behavior of ['removed', 'isolated', 'mergedWithPrevious', 'mergedWithNext', 'contiguous']) {
    const name = behavior[0].toUpperCase() + behavior.slice(1);
    preTokenizers.push([{ type: 'Punctuation', behavior: name }, tk.punctuationPreTokenizer(behavior)]);
    for (const invert of [false, true]) {
      preTokenizers.push([{ type: 'Split', pattern: { String: ' ' }, behavior: name, invert }, tk.splitPreTokenizer(' ', behavior, invert)]);
    }
  }
  preTokenizers.push([{ type: 'Sequence', pretokenizers: [{ type: 'WhitespaceSplit' }, { type: 'Punctuation', behavior: 'Isolated' }, { type: 'Digits', individual_digits: false }] },
    tk.sequencePreTokenizer([tk.whitespaceSplitPreTokenizer(), tk.punctuationPreTokenizer('isolated'), tk.digitsPreTokenizer(false)])]);
  const stressLines = lines(stress);
  const result = {
    normalizers: normalizers.map(([config, n]) => ({ config, outputs: stressLines.map((l) => n.normalizeString(l)) })),
    pre_tokenizers: preTokenizers.map(([config, p]) => ({ config, outputs: stressLines.map((l) => p.preTokenizeString(l).map((piece) => piece[0])) })),
  };
  fs.writeFileSync(path.join(out, 'components.json'), JSON.stringify(result) + '\n');
}

writeComponentGoldens();
main().then(() => fs.rmSync(tmp, { recursive: true, force: true }));
