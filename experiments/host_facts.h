// Facts about the machine and the program that made an ablation run: CPU model, rota version.
#pragma once

#include <string>

namespace rota::experiments {

/// The CPU's model name as /proc/cpuinfo gives it ("AMD EPYC 7B13", "Intel(R) Xeon(R) ..."),
/// with runs of spaces collapsed; "unknown CPU" where the file or the field is missing.
std::string cpu_model_name();

/// Parses the model name out of /proc/cpuinfo's text (the first "model name" field, else the
/// first "Hardware", "cpu model" or "Processor" field); empty when there is none.
std::string cpu_model_from_cpuinfo(const std::string& cpuinfo);

/// The time now, "2026-12-07 11:40 UTC".
std::string utc_time_text();

/// The first line `program --version` prints ("rota 0.1.0 (git 1a2b3c4d5e6f)"), or an empty
/// string when it cannot be run or prints nothing. `scratch` is a directory for its output.
std::string program_version(const std::string& program, const std::string& program_name,
                            const std::string& scratch);

}  // namespace rota::experiments
