// TextStream: incremental text of a growing id sequence from whole-sequence decodes.
#include "app/run/text_stream.h"

#include <algorithm>

namespace rota::app {

namespace {
constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD in UTF-8
}  // namespace

TextStream::TextStream(const data::Tokenizer& tokenizer, std::vector<int64_t> prompt)
    : tokenizer_(tokenizer), ids_(std::move(prompt)) {}

std::string TextStream::start() {
  return advance(false);
}

std::string TextStream::push(int64_t id) {
  ids_.push_back(id);
  return advance(false);
}

std::string TextStream::finish() {
  return advance(true);
}

std::string TextStream::advance(bool final) {
  std::string text = tokenizer_.decode(ids_);
  if (!final && text.size() >= 3 && text.compare(text.size() - 3, 3, kReplacement) == 0) {
    text.resize(text.size() - 3);  // an incomplete character may still be completed
  }
  // Normally text extends what was printed; if a later token rewrote the end (it cannot for
  // Rota's tokenizers), print from where the two part instead of repeating the start.
  const auto parted = std::mismatch(printed_.begin(), printed_.end(), text.begin(), text.end());
  const size_t common = static_cast<size_t>(parted.first - printed_.begin());
  if (common < printed_.size() && !final) return "";
  std::string added = text.substr(common);
  printed_ = std::move(text);
  return added;
}

}  // namespace rota::app
