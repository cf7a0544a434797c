// Inheriting the pretrained model block (see model_inheritance.h).
#include "recipes/model_inheritance.h"

#include <memory>
#include <vector>

#include <google/protobuf/message.h>

#include "recipes/applicability.h"

namespace rota::recipes {
namespace {

namespace pb = google::protobuf;
using FD = pb::FieldDescriptor;

std::vector<const FD*> set_fields(const pb::Message& message) {
  std::vector<const FD*> fields;
  message.GetReflection()->ListFields(message, &fields);
  return fields;
}

bool is_singular_message(const FD& field) {
  return field.cpp_type() == FD::CPPTYPE_MESSAGE && !field.is_repeated();
}

// base := base overlaid with written (see inherit_model).
void overlay(pb::Message& base, const pb::Message& written) {
  const pb::Reflection* reflection = base.GetReflection();
  for (const FD* field : set_fields(written)) {
    if (field->is_repeated()) reflection->ClearField(&base, field);
  }
  for (const FD* field : set_fields(written)) {
    if (!is_singular_message(*field)) continue;
    // Selecting a oneof member clears the member base had.
    overlay(*reflection->MutableMessage(&base, field),
            written.GetReflection()->GetMessage(written, field));
  }
  // Scalars and lists: a copy of `written` without its sub-messages, merged over base.
  std::unique_ptr<pb::Message> flat(written.New());
  flat->CopyFrom(written);
  for (const FD* field : set_fields(*flat)) {
    if (is_singular_message(*field)) flat->GetReflection()->ClearField(flat.get(), field);
  }
  base.MergeFrom(*flat);
}

// Clears the fields of `message` that `written` (its counterpart in what the recipe wrote, or
// null) does not set and that do not apply to `recipe`.
void drop_inapplicable_inherited(const Recipe& recipe, pb::Message& message,
                                 const pb::Message* written) {
  const pb::Reflection* reflection = message.GetReflection();
  for (const FD* field : set_fields(message)) {
    const bool is_written =
        written != nullptr &&
        (field->is_repeated() ? written->GetReflection()->FieldSize(*written, field) > 0
                              : written->GetReflection()->HasField(*written, field));
    if (!is_written && inapplicable_reason(recipe, message, *field)) {
      reflection->ClearField(&message, field);
      continue;
    }
    if (is_singular_message(*field)) {
      drop_inapplicable_inherited(
          recipe, *reflection->MutableMessage(&message, field),
          is_written ? &written->GetReflection()->GetMessage(*written, field) : nullptr);
    }
  }
}

}  // namespace

void inherit_model(Recipe& recipe, const Model& pretrained) {
  const Model written = recipe.model();
  Model merged = pretrained;
  overlay(merged, written);
  // A softmax model's grouped key/value heads do not carry over to a recipe that makes the
  // attention linear (linearisation): linear attention keeps one key/value head per query head.
  if (!written.has_kv_heads() && merged.attention().has_linear() && !merged.has_hybrid()) {
    merged.clear_kv_heads();
  }
  *recipe.mutable_model() = merged;
  drop_inapplicable_inherited(recipe, *recipe.mutable_model(), &written);
}

}  // namespace rota::recipes
