// Number validators and unknown-command messages (see command_checks.h).
#include "cli/commands/command_checks.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "app/setup/memory_budget.h"
#include "recipes/overrides.h"
#include "recipes/recipe_error.h"

namespace rota::cli {
namespace {

// The value of `text` when all of it is a number (strtod: also "nan" and "inf").
std::optional<double> parse_number(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return std::nullopt;
  return value;  // out of range (1e999): +-HUGE_VAL, refused as infinite or as too small
}

enum class Bound { kAtLeastZero, kAboveZero };

CLI::Validator number_validator(Bound bound, bool must_be_finite, const std::string& description) {
  return CLI::Validator(
      [bound, must_be_finite](std::string& input) -> std::string {
        const std::optional<double> value = parse_number(input);
        if (!value) return "";  // not a number: the option's conversion says so
        if (std::isnan(*value) || (must_be_finite && std::isinf(*value))) {
          return fmt::format("must be a finite number{}, got {}",
                             bound == Bound::kAboveZero ? " > 0" : " >= 0", input);
        }
        if (bound == Bound::kAtLeastZero && *value < 0) {
          return fmt::format("must be >= 0, got {}", input);
        }
        if (bound == Bound::kAboveZero && *value <= 0) {
          return fmt::format("must be > 0, got {}", input);
        }
        return "";
      },
      description);
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// What a command word of the message shows: printable, at most 40 characters.
std::string shown(std::string_view word) {
  std::string text;
  for (const char c : word.substr(0, 40)) {
    const auto byte = static_cast<unsigned char>(c);
    text += byte >= 0x20 && byte < 0x7f ? std::string(1, c) : fmt::format("\\x{:02x}", byte);
  }
  return word.size() > 40 ? text + "..." : text;
}

}  // namespace

CLI::Validator non_negative_number() {
  return number_validator(Bound::kAtLeastZero, false, "NUMBER >= 0");
}

CLI::Validator positive_number() {
  return number_validator(Bound::kAboveZero, false, "NUMBER > 0");
}

CLI::Validator finite_non_negative_number() {
  return number_validator(Bound::kAtLeastZero, true, "FINITE >= 0");
}

std::optional<std::string> closest_word(std::string_view word,
                                        const std::vector<std::string>& words) {
  std::optional<std::string> best;
  size_t best_distance = 3;  // at most 2 edits
  for (const std::string& candidate : words) {
    const size_t distance = edit_distance(word, candidate);
    if (distance < best_distance && distance < word.size()) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

std::optional<std::string> unknown_command_message(const CLI::App& app,
                                                   const std::vector<std::string>& args) {
  const CLI::App* current = &app;
  std::string path = app.get_name();
  for (size_t i = 0;; ++i) {
    const bool more = i < args.size();
    if (more && !args[i].empty() && args[i][0] == '-') return std::nullopt;  // CLI11 judges options
    std::vector<std::string> names;
    const CLI::App* next = nullptr;
    for (const CLI::App* sub : current->get_subcommands({})) {
      names.push_back(sub->get_name());
      if (more && sub->check_name(args[i])) next = sub;
    }
    if (next != nullptr) {
      current = next;
      path += " " + next->get_name();
      continue;
    }
    // Where a command is required (rota WORD, rota data WORD): none given, or a word naming none.
    if (names.empty() || current->get_require_subcommand_min() == 0) return std::nullopt;
    std::string list;
    for (const std::string& name : names) list += (list.empty() ? "" : ", ") + name;
    if (!more) {
      return fmt::format("{}: a command is required: {}. Run {} --help for more.", path, list,
                         path);
    }
    std::string message = fmt::format("{}: unknown command '{}'", path, shown(args[i]));
    if (const auto guess = closest_word(args[i], names)) {
      message += fmt::format(" (did you mean '{}'?)", *guess);
    }
    return message + fmt::format("; the commands are {}. Run {} --help for more.", list, path);
  }
}

std::optional<std::string> unknown_option_message(const CLI::App& app,
                                                  const std::vector<std::string>& args) {
  // The command the words name (rota train, rota data fetch, ...); options of it and of its
  // parents (--help, --version) are known.
  const CLI::App* current = &app;
  std::string path = app.get_name();
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const CLI::App* next = nullptr;
    for (const CLI::App* sub : current->get_subcommands({})) {
      if (sub->check_name(args[i])) next = sub;
    }
    if (next == nullptr) break;
    current = next;
    path += " " + next->get_name();
  }
  std::vector<std::string> known;
  std::vector<const CLI::Option*> owners;  // the option of each known name
  for (const CLI::App* scope = current; scope != nullptr; scope = scope->get_parent()) {
    for (const CLI::Option* option : scope->get_options({})) {
      for (const std::string& name : option->get_lnames()) {
        known.push_back("--" + name);
        owners.push_back(option);
      }
      for (const std::string& name : option->get_snames()) {
        known.push_back("-" + name);
        owners.push_back(option);
      }
    }
  }
  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") return std::nullopt;  // the rest are positional
    if (arg.size() < 2 || arg[0] != '-' || (arg[1] != '-' && !std::isalpha(arg[1]))) continue;
    const size_t equals = arg.find('=');
    const std::string name = arg.substr(0, equals);
    const auto found = std::find(known.begin(), known.end(), name);
    if (found != known.end()) {
      // `--prompt -x`: the word after an option that takes a value is that value.
      const CLI::Option* option = owners[static_cast<size_t>(found - known.begin())];
      if (equals == std::string::npos && option->get_items_expected_min() > 0) ++i;
      continue;
    }
    std::string message = fmt::format("{}: unknown option '{}'", path, shown(name));
    if (const auto guess = closest_word(name, known)) {
      message += fmt::format(" (did you mean '{}'?)", *guess);
    }
    return message + fmt::format(". Run {} --help for the options.", path);
  }
  return std::nullopt;
}

void add_override_options(CLI::App& command, std::vector<std::string>& overrides,
                          const std::string& what) {
  // Callbacks run as each option is parsed, so --set and --unset keep their order.
  command
      .add_option_function<std::string>(
          "--set", [&overrides](const std::string& text) { overrides.push_back(text); },
          "Override a field of " + what + ": --set model.layers=6 (repeatable)")
      ->trigger_on_parse()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  command
      .add_option_function<std::string>(
          "--unset",
          [&overrides](const std::string& path) {
            overrides.push_back(std::string(1, recipes::kUnsetMark) + path);
          },
          "Remove a field or section of " + what +
              " (back to its default): --unset finetune (repeatable)")
      ->trigger_on_parse()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

void add_max_memory_option(CLI::App& command, int64_t& bytes, const std::string& what) {
  command.add_option_function<std::string>(
      "--max-memory",
      [&bytes](const std::string& text) {
        try {
          bytes = app::parse_memory_size(text, "--max-memory");
        } catch (const recipes::RecipeError& e) {
          throw CLI::ValidationError(e.what());
        }
      },
      "Refuse to start when " + what +
          " would need more memory than SIZE (e.g. 16G; default: the memory available)");
}

std::optional<std::string> split_braces_message(const std::vector<std::string>& args) {
  // '{' minus '}' in a text.
  const auto depth = [](const std::string& text) {
    return std::count(text.begin(), text.end(), '{') - std::count(text.begin(), text.end(), '}');
  };
  for (size_t i = 0; i < args.size(); ++i) {
    std::string value;
    if (args[i] == "--set" && i + 1 < args.size()) {
      value = args[++i];
    } else if (args[i].rfind("--set=", 0) == 0) {
      value = args[i].substr(6);
    } else {
      continue;
    }
    if (depth(value) <= 0) continue;
    // The words the shell split off, up to where the braces balance again.
    std::string joined = value;
    for (size_t j = i + 1; j < args.size() && depth(joined) > 0; ++j) joined += " " + args[j];
    return fmt::format(
        "--set {}: its braces do not balance: the shell split the value at a space; quote it: "
        "--set '{}'",
        value, depth(joined) == 0 ? joined : value + " ...}");
  }
  return std::nullopt;
}

}  // namespace rota::cli
