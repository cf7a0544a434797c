// Stop strings cut the streamed text before them (also split across tokens), <eos> ends a row
// only when asked, and generate_texts' rows are the batched ids with their streamed text.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "app/run/text_generation.h"
#include "data/tokenizer/byte_tokenizer.h"
#include "data/tokenizer/word_tokenizer.h"
#include "framework/base/error.h"
#include "models/language_models.h"
#include "recipes/recipe_error.h"

namespace rota::app {
namespace ROTA_TEST_FILE_NS {

struct Streamed {
  std::vector<std::string> pieces;  // what each push handed out
  std::string text;                 // start + pieces + finish
  size_t pushed = 0;                // ids pushed before the stream stopped (all when it did not)
};

Streamed stream_ids(const data::Tokenizer& tokenizer, const std::vector<int64_t>& prompt,
                    const std::vector<int64_t>& generated, const std::vector<std::string>& stops,
                    StopTextStream* out = nullptr) {
  StopTextStream local(tokenizer, prompt, stops);
  StopTextStream& stream = out ? *out : local;
  Streamed s;
  s.text = stream.start();
  for (int64_t id : generated) {
    s.pieces.push_back(stream.push(id));
    s.text += s.pieces.back();
    ++s.pushed;
    if (stream.stopped()) break;
  }
  s.text += stream.finish();
  return s;
}

TEST(StopTextStream, CutsBeforeAStopStringSplitAcrossTokens) {
  const data::ByteTokenizer bytes;
  const std::vector<int64_t> prompt = bytes.encode("Q:");
  const std::vector<int64_t> generated = bytes.encode(" to be\n\nor not");
  StopTextStream stream(bytes, prompt, {"\n\n"});
  const Streamed s = stream_ids(bytes, prompt, generated, {"\n\n"}, &stream);
  EXPECT_EQ(s.text, "Q: to be");
  EXPECT_TRUE(stream.stopped());
  EXPECT_EQ(stream.stop(), "\n\n");
  EXPECT_EQ(stream.continuation(), " to be");
  EXPECT_EQ(s.pushed, 8u);  // " to be" and both line breaks: the second completes the stop
  // The first "\n" could begin the stop string: held back, never printed.
  EXPECT_EQ(s.pieces[6], "");
  EXPECT_EQ(s.pieces[7], "");
}

TEST(StopTextStream, HoldsBackOnlyWhatCouldBeginAStopString) {
  const data::ByteTokenizer bytes;
  const std::vector<int64_t> prompt = bytes.encode(">");
  const Streamed s = stream_ids(bytes, prompt, bytes.encode("abcabd"), {"abd", "zz"});
  // a: could begin "abd" (held); b: "ab" too; c: "abc" cannot, all printed; then "ab" held,
  // "abd" found.
  EXPECT_EQ(s.pieces, (std::vector<std::string>{"", "", "abc", "", "", ""}));
  EXPECT_EQ(s.text, ">abc");
  // No stop string appears: everything held back comes out at the end.
  StopTextStream stream(bytes, prompt, {"abd"});
  const Streamed t = stream_ids(bytes, prompt, bytes.encode("xab"), {"abd"}, &stream);
  EXPECT_EQ(t.pieces, (std::vector<std::string>{"x", "", ""}));
  EXPECT_EQ(t.text, ">xab");
  EXPECT_FALSE(stream.stopped());
  EXPECT_EQ(stream.continuation(), "xab");
}

TEST(StopTextStream, TheEarliestStopStringWinsAndWithoutStopsItIsTextStream) {
  const data::ByteTokenizer bytes;
  const std::vector<int64_t> prompt = bytes.encode("P");
  StopTextStream stream(bytes, prompt, {"cd", "bcde", "b"});
  stream_ids(bytes, prompt, bytes.encode("abcdef"), {}, &stream);
  EXPECT_EQ(stream.stop(), "b");
  EXPECT_EQ(stream.continuation(), "a");
  // A stop string inside one token: the word tokenizer's " sat" holds "at".
  const auto words = data::WordTokenizer::train("the cat sat on the mat\n");
  std::vector<int64_t> all = words->encode("the cat sat on the mat");
  all.pop_back();  // the line's <eos>
  const std::vector<int64_t> head(all.begin(), all.begin() + 2);
  const std::vector<int64_t> tail(all.begin() + 2, all.end());
  EXPECT_EQ(stream_ids(*words, head, tail, {"at"}).text, "the cat s");
  const Streamed plain = stream_ids(*words, head, tail, {});
  EXPECT_EQ(plain.text, words->decode(all));
  EXPECT_EQ(plain.pieces[0], " sat");  // TextStream's pieces, nothing held back
  // The prompt is not searched: a stop string in the prompt alone does not stop.
  EXPECT_EQ(stream_ids(*words, head, tail, {"cat"}).text, words->decode(all));
  EXPECT_THROW(StopTextStream(bytes, prompt, {""}), Error);
}

TEST(StopTextStream, AStopStringOfSeveralBytesOfOneCharacter) {
  const data::ByteTokenizer bytes;
  const std::vector<int64_t> prompt = bytes.encode("x");
  // "é" is two byte tokens; the stop string is the character.
  const Streamed s = stream_ids(bytes, prompt, bytes.encode("caf\xC3\xA9!"), {"\xC3\xA9"});
  EXPECT_EQ(s.text, "xcaf");
  EXPECT_EQ(s.pushed, 5u);
}

std::unique_ptr<models::CausalLm> tiny_model(int64_t vocab) {
  models::ModelOptions o;
  o.kind = models::ModelKind::kCausalLm;
  o.vocab_size = vocab;
  o.dim = 16;
  o.layers = 1;
  o.heads = 2;
  o.ffn_dim = 32;
  Generator init_gen(3);
  auto model = std::make_unique<models::CausalLm>(o, init_gen, nullptr);
  model->eval();
  return model;
}

TEST(GenerateTexts, RowsAreTheBatchedIdsCutAtEosOnlyWhenAsked) {
  const auto words = data::WordTokenizer::train("the cat sat on the mat\na dog ran\n");
  const int64_t eos = words->specials().id(data::SpecialToken::kEos);
  const std::unique_ptr<models::CausalLm> lm = tiny_model(words->vocab_size());
  const models::CausalLm& model = *lm;
  std::vector<int64_t> cat = words->encode("the cat"), dog = words->encode("a dog ran");
  cat.pop_back();
  dog.pop_back();
  TextGenerationOptions options;
  options.sampling.tokens = 40;
  options.sampling.temperature = 3.0;  // nearly uniform over ~12 ids: <eos> comes up
  options.sampling.seed = 8;
  options.samples = 2;
  std::vector<std::string> streamed(4);
  const std::vector<GeneratedText> free =
      generate_texts(model, *words, {cat, dog}, options,
                     [&](int64_t row, const std::string& text) { streamed[row] += text; });
  ASSERT_EQ(free.size(), 4u);
  std::vector<models::GenerationRow> rows;
  for (const auto& prompt : {cat, dog}) {
    for (int64_t s = 0; s < 2; ++s) rows.push_back({prompt, models::sample_seed(8, s)});
  }
  const auto ids = models::generate_batch(model, rows, options.sampling);
  options.stop_at_eos = true;
  const std::vector<GeneratedText> cut = generate_texts(model, *words, {cat, dog}, options);
  for (size_t r = 0; r < 4; ++r) {
    EXPECT_EQ(free[r].prompt, int64_t(r / 2));
    EXPECT_EQ(free[r].sample, int64_t(r % 2));
    EXPECT_EQ(free[r].ids, ids[r]) << r;
    EXPECT_EQ(free[r].stopped_by, "length");
    EXPECT_EQ(free[r].text, streamed[r]);
    std::vector<int64_t> all = rows[r].prompt;
    all.insert(all.end(), ids[r].begin(), ids[r].end());
    EXPECT_EQ(free[r].text, words->decode(all));  // <eos> decodes as a line break
    // With stop_at_eos: the ids up to the first <eos> (kept), the text before it.
    const auto first = std::find(ids[r].begin(), ids[r].end(), eos);
    ASSERT_NE(first, ids[r].end()) << "row " << r << " drew no <eos>: the test needs one";
    EXPECT_EQ(cut[r].ids, std::vector<int64_t>(ids[r].begin(), first + 1));
    EXPECT_EQ(cut[r].stopped_by, "eos");
    std::vector<int64_t> before = rows[r].prompt;
    before.insert(before.end(), ids[r].begin(), first);
    EXPECT_EQ(cut[r].text, words->decode(before));
  }
  const data::ByteTokenizer bytes;
  EXPECT_THROW(generate_texts(*tiny_model(256), bytes, {bytes.encode("a")}, options),
               recipes::RecipeError);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::app
