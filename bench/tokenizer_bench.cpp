// Tokenizer encode throughput (MB/s of text) on WikiText-2 train with the byte-level BPE
// tokenizer.json of tests/golden/tokenizers/gpt2_bpe.json; tools/tokenizer_goldens/bench_peer.py
// measures Hugging Face tokenizers (PyPI, encode_batch over lines) on the same file and text.
// Run with OMP_NUM_THREADS=2 (and RAYON_NUM_THREADS=2 for the peer); figures in docs/data.md.
#include <benchmark/benchmark.h>

#include <filesystem>

#include "data/tokenizer/huggingface/huggingface_tokenizer.h"
#include "data/tokenizer/open_tokenizer.h"
#include "framework/base/file_io.h"

namespace rota {
namespace {

const std::filesystem::path kSource = ROTA_BENCH_SOURCE_DIR;

const std::string& corpus() {
  static const std::string text =
      read_file(kSource / ".." / "shared" / "data" / "wikitext-2" / "train.txt");
  return text;
}

void encode_corpus(benchmark::State& state, const std::string& tokenizer_file, bool cold) {
  const std::string& text = corpus();
  std::unique_ptr<data::Tokenizer> tokenizer = data::open_tokenizer(kSource / tokenizer_file);
  int64_t tokens = 0;
  for (auto _ : state) {
    // Cold: a fresh tokenizer each time, so its word caches start empty.
    if (cold) {
      state.PauseTiming();
      tokenizer = data::open_tokenizer(kSource / tokenizer_file);
      state.ResumeTiming();
    }
    const std::vector<int64_t> ids = tokenizer->encode(text);
    tokens = static_cast<int64_t>(ids.size());
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
  state.counters["tokens"] = static_cast<double>(tokens);
}

void BM_EncodeGpt2Bpe(benchmark::State& state) {
  encode_corpus(state, "tests/golden/tokenizers/gpt2_bpe.json", false);
}
void BM_EncodeGpt2BpeCold(benchmark::State& state) {
  encode_corpus(state, "tests/golden/tokenizers/gpt2_bpe.json", true);
}
void BM_EncodeBertWordPiece(benchmark::State& state) {
  encode_corpus(state, "tests/golden/tokenizers/bert_wordpiece.json", false);
}
void BM_EncodeUnigramPrecompiled(benchmark::State& state) {
  encode_corpus(state, "tests/golden/tokenizers/spm_precompiled_unigram.json", false);
}
BENCHMARK(BM_EncodeGpt2Bpe)->Unit(benchmark::kMillisecond)->MinTime(3)->UseRealTime();
BENCHMARK(BM_EncodeGpt2BpeCold)->Unit(benchmark::kMillisecond)->MinTime(3)->UseRealTime();
BENCHMARK(BM_EncodeBertWordPiece)->Unit(benchmark::kMillisecond)->MinTime(3)->UseRealTime();
BENCHMARK(BM_EncodeUnigramPrecompiled)->Unit(benchmark::kMillisecond)->MinTime(3)->UseRealTime();

}  // namespace
}  // namespace rota

BENCHMARK_MAIN();
