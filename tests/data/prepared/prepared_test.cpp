// rota data prepare's library side: shards and manifest, the ids equal to encoding the text, the
// width switch, atomic output, and the damage open() and verify_prepared() catch.
#include "data/prepared/prepare.h"

#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "data/prepared/prepared_corpus.h"
#include "data/prepared/tokenizer_digest.h"
#include "data/tokenizer/tokenizer_factory.h"
#include "data/util/sha256.h"
#include "framework/base/file_io.h"
#include "tests/data/test_files.h"
#include "tests/support/expect_error.h"

namespace rota::data {
namespace ROTA_TEST_FILE_NS {

namespace fs = std::filesystem;
using rota::testing::expect_error;
using testing::TempDir;
using testing::write_bytes;

std::string lines(int n, int words_per_line, int distinct) {
  std::string text;
  for (int l = 0; l < n; ++l) {
    for (int w = 0; w < words_per_line; ++w) {
      if (w) text += ' ';
      text += 'w';
      text += std::to_string((l * 7 + w * 13) % distinct);
    }
    text += '\n';
  }
  return text;
}

struct Fixture {
  TempDir tmp;
  fs::path corpus_dir = tmp / "corpus";
  std::unique_ptr<Tokenizer> tokenizer;
  Fixture(int distinct = 50) {
    write_bytes(corpus_dir / "train.txt", lines(300, 9, distinct));
    write_bytes(corpus_dir / "valid.txt", lines(30, 5, distinct));
    write_bytes(corpus_dir / "test.txt", "");  // an empty split: no shard
    TokenizerSpec spec;
    spec.kind = TokenizerKind::kWord;
    tokenizer = build_tokenizer(spec, lines(300, 9, distinct));
  }
  Corpus corpus() const { return Corpus::open(corpus_dir.string()); }
  PreparedManifest prepare(const fs::path& out, int64_t shard_bytes = 1000, bool force = false) {
    PrepareOptions options;
    options.out = out;
    options.shard_bytes = shard_bytes;
    options.piece_bytes = 500;
    options.threads = 2;
    options.force = force;
    return prepare_corpus(corpus(), *tokenizer, options);
  }
};

// The little-endian bytes of ids at `width` bytes each, written out independently of the library.
std::string le_bytes(const std::vector<int64_t>& ids, size_t first, size_t count, int width) {
  std::string bytes;
  for (size_t i = first; i < first + count; ++i) {
    for (int b = 0; b < width; ++b) bytes.push_back(static_cast<char>((ids[i] >> (8 * b)) & 0xff));
  }
  return bytes;
}

TEST(PrepareCorpus, ShardsHoldTheSplitsIdsAndTheManifestDescribesThem) {
  Fixture f;
  const fs::path out = f.tmp / "prepared";
  const PreparedManifest m = f.prepare(out);
  EXPECT_EQ(m.dtype, TokenWidth::kU16);
  EXPECT_EQ(m.tokenizer_kind, "word");
  EXPECT_EQ(m.vocab_size, f.tokenizer->vocab_size());
  ASSERT_EQ(m.splits.size(), 3u);
  const Corpus corpus = f.corpus();
  for (const SplitInfo& split : m.splits) {
    const std::vector<int64_t> ids = f.tokenizer->encode(corpus.read_text(split.name));
    EXPECT_EQ(split.tokens, static_cast<int64_t>(ids.size())) << split.name;
    EXPECT_EQ(split.text_bytes, static_cast<int64_t>(corpus.read_text(split.name).size()));
    // 1000-byte shards hold 500 ids each: the last is shorter, an empty split has none.
    EXPECT_EQ(split.shards.size(), (ids.size() + 499) / 500) << split.name;
    size_t at = 0;
    for (size_t s = 0; s < split.shards.size(); ++s) {
      const ShardInfo& shard = split.shards[s];
      EXPECT_EQ(shard.file, split.name + "-0000" + std::to_string(s) + ".bin");
      const size_t n = std::min<size_t>(500, ids.size() - at);
      EXPECT_EQ(shard.tokens, static_cast<int64_t>(n));
      const std::string expected = le_bytes(ids, at, n, 2);
      EXPECT_EQ(read_file(out / shard.file), expected) << shard.file;
      EXPECT_EQ(shard.sha256, sha256_hex(expected));
      at += n;
    }
    // Read back through the mapped shards.
    const PreparedCorpus prepared = PreparedCorpus::open(out);
    EXPECT_EQ(prepared.split_stream(split.name)->to_vector(), ids) << split.name;
  }
  // The manifest on disk, as JSON.
  const auto j = nlohmann::json::parse(read_file(out / "manifest.json"));
  EXPECT_EQ(j["format"], "rota.prepared");
  EXPECT_EQ(j["version"], 1);
  EXPECT_EQ(j["dtype"], "uint16");
  EXPECT_EQ(j["tokenizer"]["sha256"], tokenizer_digest(*f.tokenizer));
  EXPECT_EQ(j["splits"]["train"]["source"], f.corpus().name() + ":train");
  // Self-contained: the tokenizer is in the directory, and it is the one used.
  const PreparedCorpus prepared = PreparedCorpus::open(out);
  EXPECT_EQ(prepared.load_tokenizer()->encode("w1 w2\n"), f.tokenizer->encode("w1 w2\n"));
  prepared.check_tokenizer(*f.tokenizer);
  EXPECT_EQ(verify_prepared(out).shards,
            static_cast<int64_t>(m.splits[0].shards.size() + m.splits[1].shards.size()));
  // Nothing but the prepared directory was left next to it.
  int entries = 0;
  for (const auto& e : fs::directory_iterator(f.tmp.path())) entries += e.path() != f.corpus_dir;
  EXPECT_EQ(entries, 1);
}

// Documents the source marks: every paragraph's ids, then the end token, written out here from
// the tokenizer's encoding of each paragraph; the manifest records boundary and token.
TEST(PrepareCorpus, DocumentsTheSourceMarksEndWithTheirToken) {
  TempDir tmp;
  const std::string train = "w1 w2\nw3\n\nw4 w5\n\n\nw6\n";
  write_bytes(tmp / "corpus/train.txt", train);
  write_bytes(tmp / "corpus/valid.txt", "\nw2\n\nw3");
  TokenizerSpec spec;
  spec.kind = TokenizerKind::kWord;
  spec.specials = {SpecialToken::kUnk, SpecialToken::kEos, SpecialToken::kSep};
  const std::unique_ptr<Tokenizer> tokenizer = build_tokenizer(spec, train);
  const int64_t sep = tokenizer->specials().id(SpecialToken::kSep);
  PrepareOptions options;
  options.out = tmp / "prepared";
  options.piece_bytes = 4;  // documents span pieces
  options.threads = 2;
  options.documents = DocumentBoundary::kParagraphs;
  options.document_end_token = sep;
  const PreparedManifest m =
      prepare_corpus(Corpus::open((tmp / "corpus").string()), *tokenizer, options);
  const auto document = [&](const std::string& text) {
    std::vector<int64_t> ids = tokenizer->encode(text);
    ids.push_back(sep);
    return ids;
  };
  std::vector<int64_t> expected_train;
  for (const char* paragraph : {"w1 w2\nw3\n\n", "w4 w5\n\n\n", "w6\n"}) {
    const std::vector<int64_t> ids = document(paragraph);
    expected_train.insert(expected_train.end(), ids.begin(), ids.end());
  }
  std::vector<int64_t> expected_valid = document("\nw2\n\n");  // leading blank lines join it
  const std::vector<int64_t> last = document("w3");
  expected_valid.insert(expected_valid.end(), last.begin(), last.end());
  const PreparedCorpus prepared = PreparedCorpus::open(options.out);
  EXPECT_EQ(prepared.split_stream("train")->to_vector(), expected_train);
  EXPECT_EQ(prepared.split_stream("valid")->to_vector(), expected_valid);
  EXPECT_EQ(m.documents, DocumentBoundary::kParagraphs);
  EXPECT_EQ(prepared.manifest().documents, DocumentBoundary::kParagraphs);
  EXPECT_EQ(prepared.manifest().document_end_token, sep);
  const auto j = nlohmann::json::parse(read_file(options.out / "manifest.json"));
  EXPECT_EQ(j["documents"]["boundary"], "paragraphs");
  EXPECT_EQ(j["documents"]["end_token"], sep);

  // Text that itself encodes to the end token is refused, quoting the line.
  options.out = tmp / "refused";
  options.document_end_token = tokenizer->encode("w4").at(0);
  expect_error(
      [&] { prepare_corpus(Corpus::open((tmp / "corpus").string()), *tokenizer, options); },
      {"the train split's text itself encodes to the document separator",
       "in the line \"w4 w5\";"});
  EXPECT_FALSE(fs::exists(tmp / "refused"));
}

TEST(PreparedManifest, DocumentFieldsAreCheckedAndOptional) {
  PreparedManifest m;
  m.tokenizer_kind = "char";
  m.tokenizer_sha256 = "00";
  m.vocab_size = 10;
  m.source = "x";
  const std::string plain = manifest_to_json(m);
  EXPECT_EQ(plain.find("documents"), std::string::npos);  // none: no field, as before
  EXPECT_EQ(manifest_from_json(plain, "m.json").documents, DocumentBoundary::kNone);
  EXPECT_EQ(manifest_from_json(plain, "m.json").document_end_token, -1);
  m.documents = DocumentBoundary::kWikitextArticles;
  m.document_end_token = 9;
  const PreparedManifest back = manifest_from_json(manifest_to_json(m), "m.json");
  EXPECT_EQ(back.documents, DocumentBoundary::kWikitextArticles);
  EXPECT_EQ(back.document_end_token, 9);
  auto j = nlohmann::json::parse(manifest_to_json(m));
  j["documents"]["end_token"] = 10;
  expect_error([&] { manifest_from_json(j.dump(), "m.json"); },
               {"m.json", "document end token 10 is outside the vocabulary [0, 10)"});
  j["documents"]["end_token"] = 3;
  j["documents"]["boundary"] = "chapters";
  expect_error([&] { manifest_from_json(j.dump(), "m.json"); },
               {"m.json", "unknown document boundary 'chapters'"});
  j["documents"].erase("boundary");
  expect_error([&] { manifest_from_json(j.dump(), "m.json"); }, {"missing field 'boundary'"});
}

TEST(PrepareCorpus, AVocabularyAbove65536UsesFourByteIds) {
  Fixture f(/*distinct=*/70000);  // more distinct words than 2^16 ids
  TokenizerSpec spec;
  spec.kind = TokenizerKind::kWord;
  std::string train;
  for (int i = 0; i < 70000; ++i) {
    train += 'w';
    train += std::to_string(i);
    train += i % 10 == 9 ? '\n' : ' ';
  }
  write_bytes(f.corpus_dir / "train.txt", train);
  f.tokenizer = build_tokenizer(spec, train);
  ASSERT_GT(f.tokenizer->vocab_size(), 65536);
  const fs::path out = f.tmp / "prepared";
  const PreparedManifest m = f.prepare(out, /*shard_bytes=*/100000);
  EXPECT_EQ(m.dtype, TokenWidth::kU32);
  const std::vector<int64_t> ids = f.tokenizer->encode(train);
  const PreparedCorpus prepared = PreparedCorpus::open(out);
  const TokenStream stream = prepared.split_stream("train");
  EXPECT_EQ(stream->width(), TokenWidth::kU32);
  EXPECT_EQ(stream->to_vector(), ids);
  EXPECT_EQ(read_file(out / m.splits[0].shards[0].file), le_bytes(ids, 0, 25000, 4));
}

TEST(PrepareCorpus, RefusesANonEmptyOutputUnlessForcedAndLeavesNothingWhenItFails) {
  Fixture f;
  const fs::path out = f.tmp / "prepared";
  write_bytes(out / "notes.txt", "mine");
  expect_error([&] { f.prepare(out); }, {out.string(), "not empty", "--force"});
  EXPECT_EQ(read_file(out / "notes.txt"), "mine");
  f.prepare(out, 1000, /*force=*/true);
  EXPECT_FALSE(fs::exists(out / "notes.txt"));
  EXPECT_TRUE(fs::exists(out / "manifest.json"));
  // An empty directory is fine.
  fs::create_directories(f.tmp / "empty");
  f.prepare(f.tmp / "empty");
  EXPECT_TRUE(fs::exists(f.tmp / "empty" / "manifest.json"));
  // A tokenizer that cannot encode the valid split (a char vocabulary without <unk>) fails the
  // run after train was written: no output directory, no temporary one left behind.
  TokenizerSpec spec;
  spec.kind = TokenizerKind::kChar;
  f.tokenizer = build_tokenizer(spec, "w0 w1\n");
  write_bytes(f.corpus_dir / "valid.txt", "w0 w1 z\n");
  expect_error([&] { f.prepare(f.tmp / "failed"); }, "z");
  for (const auto& e : fs::directory_iterator(f.tmp.path())) {
    EXPECT_EQ(e.path().filename().string().find("failed"), std::string::npos) << e.path();
  }
}

TEST(PreparedCorpus, DamageIsReportedNamingTheFile) {
  Fixture f;
  const fs::path good = f.tmp / "good";
  const PreparedManifest m = f.prepare(good);
  const std::string shard = m.splits[0].shards[1].file;
  auto copy = [&](const std::string& name) {
    const fs::path dir = f.tmp / name;
    fs::copy(good, dir, fs::copy_options::recursive);
    return dir;
  };
  // A truncated shard: caught when opened (sizes), before any training.
  fs::path dir = copy("truncated");
  fs::resize_file(dir / shard, 10);
  expect_error([&] { PreparedCorpus::open(dir); }, {shard, "10 bytes", "1000"});
  // A missing shard.
  dir = copy("missing");
  fs::remove(dir / shard);
  expect_error([&] { PreparedCorpus::open(dir); }, {shard, "missing"});
  // A changed id inside the vocabulary keeps the size: open() accepts it, verify finds it.
  // Ids are little-endian uint16 here: byte 2 is the low byte of id 1.
  dir = copy("flipped");
  std::string bytes = read_file(dir / shard);
  const int id1 = static_cast<unsigned char>(bytes[2]);
  bytes[2] = static_cast<char>(id1 == 0 ? 1 : id1 - 1);
  write_bytes(dir / shard, bytes);
  EXPECT_NO_THROW(PreparedCorpus::open(dir));
  expect_error([&] { verify_prepared(dir); }, {shard, "sha256"});
  // An id outside the vocabulary in a small shard is found when the directory is opened,
  // naming the shard and `rota data verify`; verify names every damaged shard.
  dir = copy("out-of-vocabulary");
  bytes = read_file(dir / shard);
  bytes[3] = static_cast<char>(0x7f);  // id 1 >= 32,512 > the vocabulary
  write_bytes(dir / shard, bytes);
  expect_error([&] { PreparedCorpus::open(dir); },
               {shard, "outside the vocabulary [0, " + std::to_string(m.vocab_size) + ")",
                "rota data verify"});
  const std::string first_shard = m.splits[0].shards[0].file;
  std::string other_bytes = read_file(dir / first_shard);
  other_bytes[0] ^= 1;
  write_bytes(dir / first_shard, other_bytes);
  size_t shards = 0;
  for (const SplitInfo& split : m.splits) shards += split.shards.size();
  expect_error(
      [&] { verify_prepared(dir); },
      {"2 of the " + std::to_string(shards) + " shards", first_shard + " (split 'train'): sha256",
       shard + " (split 'train'): sha256", "at position 1, outside the vocabulary"});
  // Another manifest version, or no manifest (an interrupted prepare).
  dir = copy("version");
  std::string manifest = read_file(dir / "manifest.json");
  manifest.replace(manifest.find("\"version\": 1"), 12, "\"version\": 2");
  write_bytes(dir / "manifest.json", manifest);
  expect_error([&] { PreparedCorpus::open(dir); }, {"manifest.json", "version 2"});
  dir = copy("no-manifest");
  fs::remove(dir / "manifest.json");
  expect_error([&] { PreparedCorpus::open(dir); }, {"manifest.json", "prepare"});
  // An edited tokenizer file.
  dir = copy("tokenizer");
  write_bytes(dir / "tokenizer" / "vocab.txt", "<unk>\n<eos>\nw1\n");
  expect_error([&] { PreparedCorpus::open(dir); }, {"tokenizer", "damaged"});
  // Training with another tokenizer than the ids were made with.
  TokenizerSpec spec;
  spec.kind = TokenizerKind::kWord;
  const auto other = build_tokenizer(spec, "w1 w2 w3\n");
  expect_error([&] { PreparedCorpus::open(good).check_tokenizer(*other); }, "tokenizer mismatch");
}

// Two preparations into one --out: the one that finishes second finds the place taken, says so
// in Rota's words, leaves the other's directory as it was and removes its own temporary one.
TEST(PreparedCorpus, APreparationThatFindsItsOutputTakenMeanwhileLeavesItAndSaysSo) {
  Fixture f;
  const fs::path out = f.tmp / "shared";
  const fs::path other = f.tmp / "other";
  f.prepare(other);
  PrepareOptions options;
  options.out = out;
  options.shard_bytes = 1000;
  options.piece_bytes = 500;
  options.threads = 2;
  bool raced = false;
  options.progress = [&](const PrepareProgress&) {
    if (raced) return;
    raced = true;  // the other process renames its finished directory into place
    fs::copy(other, out, fs::copy_options::recursive);
  };
  expect_error([&] { prepare_corpus(f.corpus(), *f.tokenizer, options); },
               {"data prepare: could not move the prepared corpus into " + out.string(),
                "another process changed that directory", "rota data verify " + out.string()});
  EXPECT_EQ(read_file(out / "manifest.json"), read_file(other / "manifest.json"));
  EXPECT_NO_THROW(verify_prepared(out));
  for (const auto& entry : fs::directory_iterator(f.tmp.path())) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp."), std::string::npos) << entry.path();
  }
}

TEST(TokenizerDigest, SurvivesASaveAndLoadForEveryKind) {
  // Training checks the run's tokenizer (loaded from the directory or a checkpoint, saved again)
  // against the manifest's digest, so save(load(x)) must give x's files back.
  const std::string text = lines(400, 8, 120);
  for (TokenizerKind kind : {TokenizerKind::kByte, TokenizerKind::kChar, TokenizerKind::kWord,
                             TokenizerKind::kBpe, TokenizerKind::kUnigram}) {
    TokenizerSpec spec;
    spec.kind = kind;
    if (kind == TokenizerKind::kBpe || kind == TokenizerKind::kUnigram) spec.vocab_size = 80;
    const auto tokenizer = build_tokenizer(spec, text);
    const TempDir tmp;
    tokenizer->save(tmp / "a");
    const auto loaded = load_tokenizer(tmp / "a");
    EXPECT_EQ(tokenizer_digest(*loaded), tokenizer_dir_digest(tmp / "a")) << tokenizer->kind();
    EXPECT_EQ(tokenizer_digest(*tokenizer), tokenizer_dir_digest(tmp / "a")) << tokenizer->kind();
  }
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::data
