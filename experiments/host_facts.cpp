// The CPU model and the program's version for ablation records (see host_facts.h).
#include "experiments/host_facts.h"

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "experiments/subprocess.h"
#include "framework/base/file_io.h"

namespace fs = std::filesystem;

namespace rota::experiments {

namespace {

std::string trimmed_collapsed(const std::string& text) {
  std::string out;
  bool space = false;
  for (const char c : text) {
    if (c == ' ' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

}  // namespace

std::string cpu_model_from_cpuinfo(const std::string& cpuinfo) {
  // x86 names the model in "model name"; other architectures use one of the others.
  for (const char* key : {"model name", "Hardware", "cpu model", "Processor"}) {
    std::istringstream lines(cpuinfo);
    for (std::string line; std::getline(lines, line);) {
      const size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      if (trimmed_collapsed(line.substr(0, colon)) != key) continue;
      const std::string value = trimmed_collapsed(line.substr(colon + 1));
      if (!value.empty()) return value;
    }
  }
  return "";
}

namespace {

// The first processor's value of `key` ("cpu family", "flags"), or empty.
std::string first_field(const std::string& cpuinfo, const std::string& key) {
  std::istringstream lines(cpuinfo);
  for (std::string line; std::getline(lines, line);) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    if (trimmed_collapsed(line.substr(0, colon)) == key) {
      return trimmed_collapsed(line.substr(colon + 1));
    }
  }
  return "";
}

bool has_flag(const std::string& flags, const std::string& flag) {
  std::istringstream words(flags);
  for (std::string word; words >> word;) {
    if (word == flag) return true;
  }
  return false;
}

}  // namespace

std::string cpu_description_from_cpuinfo(const std::string& cpuinfo) {
  const std::string model = cpu_model_from_cpuinfo(cpuinfo);
  std::vector<std::string> details;
  const std::string family = first_field(cpuinfo, "cpu family");
  const std::string model_number = first_field(cpuinfo, "model");
  if (!family.empty() && !model_number.empty()) {
    details.push_back(fmt::format("family {} model {}", family, model_number));
  }
  // The widest vector/matrix unit oneDNN and Rota's kernels can pick on this CPU: runs made
  // with different ones sum in different orders.
  const std::string flags = first_field(cpuinfo, "flags");
  if (has_flag(flags, "amx_tile")) {
    details.push_back("AMX");
  } else if (has_flag(flags, "avx512f")) {
    details.push_back("AVX-512");
  } else if (has_flag(flags, "avx2")) {
    details.push_back("AVX2");
  }
  if (model.empty() && details.empty()) return "";
  const std::string name = model.empty() ? "unknown CPU" : model;
  if (details.empty()) return name;
  return fmt::format("{} ({})", name, fmt::join(details, ", "));
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::ostringstream text;
  text << in.rdbuf();
  const std::string description = cpu_description_from_cpuinfo(text.str());
  return description.empty() ? "unknown CPU" : description;
}

std::string utc_time_text() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  return fmt::format("{:%Y-%m-%d %H:%M} UTC", fmt::gmtime(now));
}

std::string program_version(const std::string& program, const std::string& program_name,
                            const std::string& scratch) {
  const fs::path output = fs::path(scratch) / "version.out";
  fs::remove(output);
  ChildCommand command;
  command.program = program;
  command.argv = {program_name, "--version"};
  command.stdout_path = output;
  command.stderr_path = output;
  const ChildExit exit = run_child(command);
  std::string first;
  if (exit.ok() && fs::exists(output)) {
    std::istringstream lines(read_file(output));
    std::getline(lines, first);
  }
  fs::remove(output);
  return first;
}

}  // namespace rota::experiments
