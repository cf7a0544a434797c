// Special-token roles of a tokenizer.json.
#include "data/tokenizer/huggingface/hf_special_roles.h"

#include <string_view>
#include <utility>

namespace rota::data::hf {

namespace {

// Contents of special added tokens that name a role (docs/data.md has this table).
constexpr std::pair<std::string_view, SpecialToken> kRoleContents[] = {
    {"[PAD]", SpecialToken::kPad},
    {"<pad>", SpecialToken::kPad},
    {"<|padding|>", SpecialToken::kPad},
    {"<|pad|>", SpecialToken::kPad},
    {"[UNK]", SpecialToken::kUnk},
    {"<unk>", SpecialToken::kUnk},
    {"<|unk|>", SpecialToken::kUnk},
    {"[BOS]", SpecialToken::kBos},
    {"<s>", SpecialToken::kBos},
    {"<bos>", SpecialToken::kBos},
    {"<|begin_of_text|>", SpecialToken::kBos},
    {"<|startoftext|>", SpecialToken::kBos},
    {"[EOS]", SpecialToken::kEos},
    {"</s>", SpecialToken::kEos},
    {"<eos>", SpecialToken::kEos},
    {"<|endoftext|>", SpecialToken::kEos},
    {"<|end_of_text|>", SpecialToken::kEos},
    {"[MASK]", SpecialToken::kMask},
    {"<mask>", SpecialToken::kMask},
    {"<|mask|>", SpecialToken::kMask},
    {"[CLS]", SpecialToken::kCls},
    {"<cls>", SpecialToken::kCls},
    {"<s>", SpecialToken::kCls},
    {"[SEP]", SpecialToken::kSep},
    {"<sep>", SpecialToken::kSep},
    {"</s>", SpecialToken::kSep},
};

struct Roles {
  int64_t cls = -1, sep = -1;
};

// An id given as ["token", id] (BertProcessing, RobertaProcessing).
int64_t token_pair_id(const json& value, const JsonPath& at, std::string_view name) {
  const json& pair = member(value, at, name);
  if (!pair.is_array() || pair.size() != 2 || !pair[0].is_string() || !pair[1].is_number_integer())
    fail_at(at.key(name), "must be [\"token\", id]");
  return pair[1].get<int64_t>();
}

void read_post_processor(const json& value, const JsonPath& at, Roles& roles) {
  const std::string type = component_type(value, at);
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    if (roles.cls < 0) roles.cls = token_pair_id(value, at, "cls");
    if (roles.sep < 0) roles.sep = token_pair_id(value, at, "sep");
    return;
  }
  if (type == "ByteLevel") return;
  if (type == "Sequence") {
    const json& list = array_member(value, at, "processors");
    for (size_t i = 0; i < list.size(); ++i)
      read_post_processor(list[i], at.key("processors").index(i), roles);
    return;
  }
  if (type == "TemplateProcessing") {
    const json& single = array_member(value, at, "single");
    const json& specials = member(value, at, "special_tokens");
    bool seen_sequence = false;
    for (size_t i = 0; i < single.size(); ++i) {
      const JsonPath where = at.key("single").index(i);
      const json& piece = single[i];
      if (has(piece, "Sequence")) {
        seen_sequence = true;
        continue;
      }
      if (!has(piece, "SpecialToken"))
        fail_at(where, "must be {{\"SpecialToken\": ...}} or {{\"Sequence\": ...}}");
      const std::string name =
          string_member(member(piece, where, "SpecialToken"), where.key("SpecialToken"), "id");
      const JsonPath token_at = at.key("special_tokens").key(name);
      const json& ids =
          array_member(member(specials, at.key("special_tokens"), name), token_at, "ids");
      if (ids.size() != 1 || !ids[0].is_number_integer())
        continue;  // a multi-id marker has no role
      int64_t& role = seen_sequence ? roles.sep : roles.cls;
      if (role < 0) role = ids[0].get<int64_t>();
    }
    return;
  }
  unsupported_type(at, "a post-processor", type, kSupportedPostProcessors);
}

}  // namespace

SpecialTokens special_roles(const json& doc, const JsonPath& root, const Model& model,
                            const std::vector<AddedToken>& added) {
  SpecialTokens specials;
  Roles roles;
  if (has(doc, "post_processor"))
    read_post_processor(doc["post_processor"], root.key("post_processor"), roles);
  if (roles.cls >= 0) specials.set(SpecialToken::kCls, roles.cls);
  if (roles.sep >= 0) specials.set(SpecialToken::kSep, roles.sep);
  if (model.unk_token()) {
    const int64_t unk = model.find(*model.unk_token());
    if (unk >= 0) specials.set(SpecialToken::kUnk, unk);
  }
  for (const auto& [content, role] : kRoleContents) {
    if (specials.has(role)) continue;
    for (const AddedToken& token : added) {
      if (token.special && token.content == content) {
        specials.set(role, token.id);
        break;
      }
    }
  }
  return specials;
}

}  // namespace rota::data::hf
