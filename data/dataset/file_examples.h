// Classification examples from the records of the user's files (data.files).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "data/dataset/classification_dataset.h"
#include "data/source/file_source.h"
#include "data/source/label_map.h"

namespace rota::data {

/// The label of every record of a split, as written, in order (for LabelMap).
std::vector<std::string> record_labels(const FileSource& files, std::string_view split);

/// The records of a split as examples: text, text_pair (when the source names one), and the
/// label mapped to its class id through `labels` (an unknown label is an error naming
/// file:line and the known labels); nullptr: unlabelled.
std::vector<TextExample> file_examples(const FileSource& files, std::string_view split,
                                       const LabelMap* labels);

}  // namespace rota::data
