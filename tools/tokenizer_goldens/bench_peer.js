// The peer of bench/tokenizer_bench.cpp: Hugging Face tokenizers (Node bindings) encoding
// WikiText-2 train with the same tokenizer.json, encodeBatch over the lines (each with its
// '\n', no special tokens) as Rota's encoding contract says. Usage:
//   RAYON_NUM_THREADS=2 node bench_peer.js [tokenizer.json] [repeats]
'use strict';
const fs = require('fs');
const path = require('path');
const tk = require('tokenizers');

const repo = path.resolve(__dirname, '..', '..');
const file = process.argv[2] || path.join(repo, 'tests', 'golden', 'tokenizers', 'gpt2_bpe.json');
const repeats = Number(process.argv[3] || 5);
const text = fs.readFileSync(path.join(repo, '..', 'shared', 'data', 'wikitext-2', 'train.txt'), 'utf8');
const bytes = Buffer.byteLength(text, 'utf8');
const lines = text.split(/(?<=\n)/).filter((l) => l.length > 0);

async function main() {
  const tokenizer = tk.Tokenizer.fromFile(file);
  const times = [];
  let tokens = 0;
  for (let r = 0; r < repeats + 1; ++r) {
    const start = process.hrtime.bigint();
    const encodings = await tokenizer.encodeBatch(lines, { addSpecialTokens: false });
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    tokens = encodings.reduce((n, e) => n + e.getIds().length, 0);
    if (r > 0) times.push(seconds);  // the first run warms the caches
  }
  times.sort((a, b) => a - b);
  const median = times[Math.floor(times.length / 2)];
  console.log(`hf-tokenizers ${path.basename(file)}: ${(bytes / 1e6 / median).toFixed(2)} MB/s ` +
    `(median of ${repeats}, ${median.toFixed(3)} s, ${tokens} tokens, RAYON_NUM_THREADS=${process.env.RAYON_NUM_THREADS || 'unset'})`);
}
main();
