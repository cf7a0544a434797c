// Command-line checks with messages that name what is wrong: number options and unknown words.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

namespace rota::cli {

/// Option validators (`->check(...)`). A failure reads "--context: must be > 0, got -5" (exit
/// code 2, like every usage error); a value that is not a number at all is left to the option's
/// own conversion ("Could not convert").
/// A number >= 0 (counts where 0 means "all" or "none").
CLI::Validator non_negative_number();
/// A number > 0.
CLI::Validator positive_number();
/// A finite number >= 0 (a float option: "nan", "inf" and negatives are refused).
CLI::Validator finite_non_negative_number();

/// For a command line whose words name a command (`rota train ...`): "rota train: unknown option
/// '--stpo-after' (did you mean '--stop-after'?)..." for the first option that neither the command
/// nor its parents have; nothing when every option is known (CLI11 parses the rest). A value
/// that looks like an option (a negative number) is left to CLI11.
std::optional<std::string> unknown_option_message(const CLI::App& app,
                                                  const std::vector<std::string>& args);

/// For a `--set` whose value opens more braces than it closes — a shell split it at a space
/// (`--set model.position={rope {}}` unquoted) — the quoted command to type instead: "--set
/// model.position={rope: its braces do not balance: the shell split the value at a space; quote
/// it: --set 'model.position={rope {}}'". Nothing when every --set value balances.
std::optional<std::string> split_braces_message(const std::vector<std::string>& args);

/// Adds `--set PATH=VALUE` and `--unset PATH` (both repeatable) to `command`, appending to
/// `overrides` in command-line order (an unset is recipes::kUnsetMark + PATH): `what` says what
/// they apply to, for the help text.
void add_override_options(CLI::App& command, std::vector<std::string>& overrides,
                          const std::string& what);

/// Adds `--max-memory SIZE` to `command`: the bytes of SIZE (16G, 512MB, ...) go to `bytes`; a
/// malformed size is a usage error naming the option.
void add_max_memory_option(CLI::App& command, int64_t& bytes, const std::string& what);

/// The word of `words` closest to `word` by edit distance, when it is close enough to be a
/// likely typo (at most 2 edits, and fewer than the word's length); else nothing.
std::optional<std::string> closest_word(std::string_view word,
                                        const std::vector<std::string>& words);

/// For a command line (without the program name) whose command word is not one of `app`'s
/// subcommands, or of a group's (`rota data lst`): "rota: unknown command 'trian' (did you mean
/// 'train'?); the commands are train, eval, ...". With no command word where one is required
/// (`rota`, `rota data`): "rota data: a command is required: list, fetch, ...". Nothing when the
/// words before the first option or argument are known commands (CLI11 parses the rest).
std::optional<std::string> unknown_command_message(const CLI::App& app,
                                                   const std::vector<std::string>& args);

}  // namespace rota::cli
