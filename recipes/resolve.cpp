// Resolving a recipe: schema defaults, derived defaults and default oneof members made explicit.
#include "recipes/resolve.h"

#include <cmath>
#include <limits>
#include <set>
#include <string>

#include "recipes/applicability.h"
#include "recipes/corpora.h"

namespace rota::recipes {

namespace pb = google::protobuf;
using FD = pb::FieldDescriptor;

namespace {

/// Sub-messages whose absence means "off": not created by resolution.
bool is_optional_section(const FD& field) {
  static const std::set<std::string> kSections = {
      "rota.recipes.Recipe.finetune",
      "rota.recipes.Train.sample",
      "rota.recipes.Train.early_stopping",
      "rota.recipes.SoftmaxAttention.streaming",
      "rota.recipes.Data.tsv",
      "rota.recipes.LinearAttention.decay",
      "rota.recipes.LinearAttention.gating",
      "rota.recipes.Model.hybrid",
      "rota.recipes.Hybrid.attention",
      "rota.recipes.Hybrid.position",
      "rota.recipes.Model.biases",
      "rota.recipes.Rope.scaling",
      "rota.recipes.Finetune.lora",
      "rota.recipes.Recipe.linearize",
  };
  return kSections.count(field.full_name()) > 0;
}

/// Sets an unset scalar field to its schema default.
void set_schema_default(pb::Message& message, const FD& field) {
  const pb::Reflection* r = message.GetReflection();
  switch (field.cpp_type()) {
    case FD::CPPTYPE_INT32:
      r->SetInt32(&message, &field, field.default_value_int32());
      break;
    case FD::CPPTYPE_INT64:
      r->SetInt64(&message, &field, field.default_value_int64());
      break;
    case FD::CPPTYPE_UINT32:
      r->SetUInt32(&message, &field, field.default_value_uint32());
      break;
    case FD::CPPTYPE_UINT64:
      r->SetUInt64(&message, &field, field.default_value_uint64());
      break;
    case FD::CPPTYPE_DOUBLE:
      r->SetDouble(&message, &field, field.default_value_double());
      break;
    case FD::CPPTYPE_FLOAT:
      r->SetFloat(&message, &field, field.default_value_float());
      break;
    case FD::CPPTYPE_BOOL:
      r->SetBool(&message, &field, field.default_value_bool());
      break;
    case FD::CPPTYPE_ENUM:
      r->SetEnum(&message, &field, field.default_value_enum());
      break;
    case FD::CPPTYPE_STRING:
      r->SetString(&message, &field, field.default_value_string());
      break;
    case FD::CPPTYPE_MESSAGE:
      break;
  }
}

/// Head dimension D when width and heads are valid, else 0.
int head_dim(const Model& model) {
  if (model.width() < 1 || model.heads() < 1 || model.width() % model.heads() != 0) return 0;
  return model.width() / model.heads();
}

/// Derived defaults and default oneof members of one message.
void fill_derived(const Recipe& recipe, pb::Message& message) {
  const std::string& type = message.GetDescriptor()->full_name();
  const Model& model = recipe.model();
  if (type == "rota.recipes.Model") {
    auto& m = static_cast<Model&>(message);
    // A σ without a scheme asks for NORMAL: what such a recipe meant before the default became
    // PYTORCH (issue 39), and the only reading under which its init_std applies.
    if (m.has_init_std() && !m.has_init_scheme()) m.set_init_scheme(Model::NORMAL);
    if (!m.has_ffn_width() && m.width() >= 1 && m.width() <= std::numeric_limits<int>::max() / 4) {
      m.set_ffn_width(default_ffn_width(m));
    }
  } else if (type == "rota.recipes.Attention") {
    auto& attention = static_cast<Attention&>(message);
    if (attention.kind_case() == Attention::KIND_NOT_SET) attention.mutable_linear();
  } else if (type == "rota.recipes.Optimizer") {
    auto& optimizer = static_cast<Optimizer&>(message);
    if (optimizer.kind_case() == Optimizer::KIND_NOT_SET) optimizer.mutable_adamw();
  } else if (type == "rota.recipes.SoftmaxAttention") {
    auto& softmax = static_cast<SoftmaxAttention&>(message);
    if (!softmax.has_scale() && head_dim(model) > 0) {
      softmax.set_scale(1.0 / std::sqrt(static_cast<double>(head_dim(model))));
    }
  } else if (type == "rota.recipes.T5") {
    auto& t5 = static_cast<T5&>(message);
    if (!t5.has_bidirectional()) t5.set_bidirectional(model.kind() != Model::CAUSAL_LM);
  } else if (type == "rota.recipes.Train") {
    auto& train = static_cast<Train&>(message);
    if (!train.has_best_metric()) {
      Train::Metric metric = Train::LOSS;
      if (model.kind() == Model::CLASSIFIER) {
        const Data& data = recipe.data();
        const KnownCorpus* corpus = data.has_corpus() ? find_corpus(data.corpus()) : nullptr;
        metric = corpus != nullptr && corpus->metric == "mcc" ? Train::MCC : Train::ACCURACY;
      }
      train.set_best_metric(metric);
    }
  } else if (type == "rota.recipes.Shaw") {
    auto& shaw = static_cast<Shaw&>(message);
    if (!shaw.has_clip_left()) shaw.set_clip_left(shaw.clip());
    if (!shaw.has_clip_right()) shaw.set_clip_right(shaw.clip());
  } else if (type == "rota.recipes.TransformerXl") {
    auto& xl = static_cast<TransformerXl&>(message);
    if (!xl.has_pe_width() && model.width() >= 1) xl.set_pe_width(model.width());
  }
}

void resolve_message(const Recipe& recipe, pb::Message& message) {
  fill_derived(recipe, message);  // first: default oneof members must exist before the walk
  const pb::Descriptor* type = message.GetDescriptor();
  const pb::Reflection* reflection = message.GetReflection();
  for (int i = 0; i < type->field_count(); ++i) {
    const FD& field = *type->field(i);
    if (field.real_containing_oneof() != nullptr && !reflection->HasField(message, &field)) {
      continue;  // an unselected oneof member
    }
    if (inapplicable_reason(recipe, message, field)) continue;
    if (field.is_repeated()) {
      if (field.cpp_type() == FD::CPPTYPE_MESSAGE) {
        for (int j = 0; j < reflection->FieldSize(message, &field); ++j) {
          resolve_message(recipe, *reflection->MutableRepeatedMessage(&message, &field, j));
        }
      }
      continue;
    }
    if (field.cpp_type() == FD::CPPTYPE_MESSAGE) {
      if (reflection->HasField(message, &field) || !is_optional_section(field)) {
        resolve_message(recipe, *reflection->MutableMessage(&message, &field));
      }
    } else if (!reflection->HasField(message, &field) && field.has_default_value() &&
               !default_withheld(message, field)) {
      set_schema_default(message, field);
    }
  }
}

}  // namespace

void resolve_recipe(Recipe& recipe) {
  resolve_message(recipe, recipe);
}

int default_ffn_width(const Model& model) {
  const bool gated =
      model.ffn_activation() == Model::SWIGLU || model.ffn_activation() == Model::GEGLU;
  return gated ? (model.width() + 2) / 3 * 8 : 4 * model.width();
}

}  // namespace rota::recipes
