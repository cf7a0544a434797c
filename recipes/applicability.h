// Which fields apply to a recipe (e.g. no `lrpe.learn_theta` with LRPE type 3), with reasons.
#pragma once

#include <optional>
#include <string>

#include <google/protobuf/message.h>

#include "recipes/recipe.pb.h"

namespace rota::recipes {

/// Why `field` of `parent` (a message inside `recipe`) does not apply to this recipe — e.g.
/// "LRPE type 3 (permutation) has no angles θ" — or nullopt when it applies.
std::optional<std::string> inapplicable_reason(const Recipe& recipe,
                                               const google::protobuf::Message& parent,
                                               const google::protobuf::FieldDescriptor& field);

/// True when `field` of `parent` keeps no schema default in a resolved recipe although it applies:
/// it may be written (and is then checked) but is not filled in. data.tokenizer.kind with a path:
/// the file says what it is, so a default BYTE would misstate it.
bool default_withheld(const google::protobuf::Message& parent,
                      const google::protobuf::FieldDescriptor& field);

}  // namespace rota::recipes
