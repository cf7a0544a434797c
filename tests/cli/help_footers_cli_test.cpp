// Every --help page of `rota` ends with one example whose options exist and the doc to read.
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/program.h"
#include "tests/support/source_tree.h"

namespace rota {
namespace ROTA_TEST_FILE_NS {

namespace fs = std::filesystem;

std::string help_of(const std::string& path) {
  const testing::CommandResult r =
      testing::run_command(testing::built_rota() + " " + path + " --help");
  EXPECT_EQ(r.code, 0) << path << "\n" << r.output;
  return r.output;
}

/// The names listed under "Subcommands:" in a help page.
std::vector<std::string> subcommands_in(const std::string& help) {
  std::vector<std::string> names;
  std::istringstream lines(help);
  bool listing = false;
  for (std::string line; std::getline(lines, line);) {
    if (line == "Subcommands:") {
      listing = true;
      continue;
    }
    if (!listing) continue;
    if (line.rfind("  ", 0) != 0) break;
    std::istringstream words(line);
    std::string name;
    words >> name;
    names.push_back(name);
  }
  return names;
}

TEST(HelpFooters, EveryCommandEndsWithAnExampleAndItsDoc) {
  // Every command, found by walking the Subcommands sections from `rota --help`.
  std::map<std::string, std::string> helps;   // path -> help text
  std::map<std::string, std::string> bodies;  // path -> help text before the footer
  std::vector<std::string> todo = {""};
  while (!todo.empty()) {
    const std::string path = todo.back();
    todo.pop_back();
    helps[path] = help_of(path);
    bodies[path] = helps[path].substr(0, helps[path].find("\nExample:\n"));
    for (const std::string& name : subcommands_in(helps[path])) {
      todo.push_back(path.empty() ? name : path + " " + name);
    }
  }
  ASSERT_GE(helps.size(), 18u) << "fewer commands than rota has";
  const std::regex footer(R"(\nExample:\n  (rota[^\n]*)\nMore: (\S+) \(in the source tree\)\n*$)");
  for (const auto& [path, help] : helps) {
    std::smatch match;
    ASSERT_TRUE(std::regex_search(help, match, footer)) << "`rota " << path << " --help`:\n"
                                                        << help;
    const std::string example = match[1];
    const std::string words = example + " ";  // a command without arguments ends in its name
    EXPECT_TRUE(fs::exists(fs::path(rota::testing::source_tree()) / match[2].str()))
        << path << ": " << match[2];
    // The example runs this command (or, for a group, one of its commands) ...
    const std::string prefix = path.empty() ? "rota " : "rota " + path + " ";
    EXPECT_EQ(words.rfind(prefix, 0), 0u) << path << ": " << example;
    // ... and every option it shows is one of the command it runs.
    std::string runs;
    for (const auto& [candidate, text] : helps) {
      const std::string command = "rota " + candidate + " ";
      if (!candidate.empty() && words.rfind(command, 0) == 0 && candidate.size() > runs.size()) {
        runs = candidate;
      }
    }
    ASSERT_FALSE(runs.empty()) << path << ": " << example << " runs no command";
    EXPECT_TRUE(subcommands_in(helps[runs]).empty()) << path << ": " << example;
    // (the options listed above the footer: the example itself would always match)
    // The recipes it names are shipped.
    const std::regex recipe(R"(recipes/\S+\.txtpb)");
    for (auto it = std::sregex_iterator(example.begin(), example.end(), recipe);
         it != std::sregex_iterator(); ++it) {
      EXPECT_TRUE(fs::exists(fs::path(rota::testing::source_tree()) / it->str()))
          << path << ": " << it->str();
    }
    const std::regex option(R"((^| )(--[a-z][a-z0-9-]*))");
    for (auto it = std::sregex_iterator(example.begin(), example.end(), option);
         it != std::sregex_iterator(); ++it) {
      const std::string name = (*it)[2];
      EXPECT_NE(bodies[runs].find(" " + name + " "), std::string::npos)
          << path << ": " << example << ": `rota " << runs << "` has no " << name;
    }
  }
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota
