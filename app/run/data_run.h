// `rota data list` and `rota data fetch NAME`: the corpus registry and where each file is.
#pragma once

#include <string>

namespace rota::app {

/// Prints the data search path, the download directory and every registered corpus with the
/// location of each of its files (or that it is missing). Returns the exit code.
int run_data_list();

/// Downloads and verifies a registered corpus, printing the path of each file; an unknown name
/// is a usage error listing the registered ones. Returns the exit code.
int run_data_fetch(const std::string& name);

}  // namespace rota::app
