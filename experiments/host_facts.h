// Facts about the machine and the program that made an ablation run: CPU model, rota version.
#pragma once

#include <string>

namespace rota::experiments {

/// The CPU as /proc/cpuinfo describes it: its model name with runs of spaces collapsed, then
/// the x86 family and model numbers and the widest vector unit it has, "AMD EPYC (family 25
/// model 17, AVX-512)" (a virtual machine's model name alone can hide which CPU it is);
/// "unknown CPU" where the file says nothing.
std::string cpu_model_name();

/// cpu_model_name() from /proc/cpuinfo's text; empty when it names nothing.
std::string cpu_description_from_cpuinfo(const std::string& cpuinfo);

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
