// The fields in which two recipes (or two parts of one) differ, as "path: old -> new" lines.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <google/protobuf/message.h>

namespace rota::recipes {

/// One line per differing field of two messages of one type, in the schema's order:
/// "model.layers: 2 -> 3" for a changed value, "<path>: x (first only)" for a field set only in
/// `first`, "<path>: y (second only)" for one set only in `second`. Paths start with `prefix`
/// ("model." for a Model message). At most `limit` lines, then "… and N more".
/// `first_only` and `second_only` name the two sides in those notes ("checkpoint only").
std::vector<std::string> field_differences(const google::protobuf::Message& first,
                                           const google::protobuf::Message& second,
                                           const std::string& prefix, size_t limit,
                                           const std::string& first_only = "first only",
                                           const std::string& second_only = "second only");

}  // namespace rota::recipes
