// Which tokens of a tokenizer.json play Rota's special roles (<pad> <unk> <bos> <eos> <mask>
// <cls> <sep>): the model's unk_token, the post-processor's cls/sep, and special added tokens
// with recognisable contents.
#pragma once

#include <vector>

#include "data/tokenizer/huggingface/hf_added_tokens.h"
#include "data/tokenizer/huggingface/hf_json.h"
#include "data/tokenizer/huggingface/hf_model.h"
#include "data/tokenizer/special_tokens.h"

namespace rota::data::hf {

/// Parses (and checks) the post-processor and derives the roles.
SpecialTokens special_roles(const json& doc, const JsonPath& root, const Model& model,
                            const std::vector<AddedToken>& added);

inline constexpr const char* kSupportedPostProcessors =
    "TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel, Sequence";

}  // namespace rota::data::hf
