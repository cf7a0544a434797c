// The command-line checks: number validators, the closest command, unknown-command messages.
#include "cli/commands/command_checks.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace rota::cli {
namespace ROTA_TEST_FILE_NS {

// What `validator` says about `value` ("" when it accepts it).
std::string judge(const CLI::Validator& validator, std::string value) {
  return validator(value);
}

TEST(CommandChecks, NumberValidatorsNameTheBoundAndTheValue) {
  EXPECT_EQ(judge(non_negative_number(), "0"), "");
  EXPECT_EQ(judge(non_negative_number(), "12"), "");
  EXPECT_EQ(judge(non_negative_number(), "-1"), "must be >= 0, got -1");
  EXPECT_EQ(judge(non_negative_number(), "nan"), "must be a finite number >= 0, got nan");
  EXPECT_EQ(judge(non_negative_number(), "abc"), "");  // left to the option's conversion
  EXPECT_EQ(judge(positive_number(), "1"), "");
  EXPECT_EQ(judge(positive_number(), "0"), "must be > 0, got 0");
  EXPECT_EQ(judge(positive_number(), "-3"), "must be > 0, got -3");
  EXPECT_EQ(judge(finite_non_negative_number(), "0.8"), "");
  EXPECT_EQ(judge(finite_non_negative_number(), "0"), "");
  for (const char* bad : {"nan", "-nan", "inf", "-inf", "infinity", "1e999"}) {
    EXPECT_EQ(judge(finite_non_negative_number(), bad),
              std::string("must be a finite number >= 0, got ") + bad);
  }
  EXPECT_EQ(judge(finite_non_negative_number(), "-0.5"), "must be >= 0, got -0.5");
}

TEST(CommandChecks, ClosestWordOnlyForLikelyTypos) {
  const std::vector<std::string> commands = {"train",  "eval",  "predict", "generate",
                                             "ablate", "bench", "data",    "export"};
  EXPECT_EQ(closest_word("trian", commands), "train");
  EXPECT_EQ(closest_word("evl", commands), "eval");
  EXPECT_EQ(closest_word("generat", commands), "generate");
  EXPECT_EQ(closest_word("frobnicate", commands), std::nullopt);
  EXPECT_EQ(closest_word("x", commands), std::nullopt);
  EXPECT_EQ(closest_word("", commands), std::nullopt);
}

TEST(CommandChecks, UnknownAndMissingCommands) {
  CLI::App app{"test", "rota"};
  app.require_subcommand(1);
  app.add_subcommand("train", "");
  CLI::App* data = app.add_subcommand("data", "");
  data->require_subcommand(1);
  data->add_subcommand("list", "");
  data->add_subcommand("fetch", "");
  EXPECT_EQ(unknown_command_message(app, {"trian", "r.txtpb"}),
            "rota: unknown command 'trian' (did you mean 'train'?); the commands are train, "
            "data. Run rota --help for more.");
  EXPECT_EQ(unknown_command_message(app, {"data", "lst"}),
            "rota data: unknown command 'lst' (did you mean 'list'?); the commands are list, "
            "fetch. Run rota data --help for more.");
  EXPECT_EQ(unknown_command_message(app, {}),
            "rota: a command is required: train, data. Run rota --help for more.");
  EXPECT_EQ(unknown_command_message(app, {"data"}),
            "rota data: a command is required: list, fetch. Run rota data --help for more.");
  EXPECT_EQ(unknown_command_message(app, {std::string("x\x01y")}).value().find("'x\\x01y'"),
            std::string("rota: unknown command ").size());
  // Known commands, options and arguments are CLI11's to parse.
  EXPECT_EQ(unknown_command_message(app, {"train", "r.txtpb"}), std::nullopt);
  EXPECT_EQ(unknown_command_message(app, {"data", "list"}), std::nullopt);
  EXPECT_EQ(unknown_command_message(app, {"--help"}), std::nullopt);
  EXPECT_EQ(unknown_command_message(app, {"data", "--help"}), std::nullopt);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::cli
