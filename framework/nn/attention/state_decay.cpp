// Per-head decay rates of the RetNet and TransNormerLLM schedules.
#include "framework/nn/attention/state_decay.h"

#include <cmath>

#include "framework/base/error.h"
#include "framework/nn/position/alibi.h"

namespace rota::nn {

std::vector<double> state_decay_rates(const StateDecayOptions& options, int64_t heads) {
  ROTA_CHECK(heads >= 1, "state decay: heads must be >= 1, got {}", heads);
  std::vector<double> rates;
  switch (options.schedule) {
    case DecaySchedule::kNone:
      break;
    case DecaySchedule::kRetNet:
      for (int64_t h = 0; h < heads; ++h) rates.push_back(1.0 - std::ldexp(1.0, -5 - int(h)));
      break;
    case DecaySchedule::kTransNormer: {
      ROTA_CHECK(options.layers >= 1 && options.layer >= 0 && options.layer < options.layers,
                 "state decay: layer {} of {} is out of range", options.layer, options.layers);
      const double depth =
          options.layers == 1 ? 0.0 : double(options.layer) / double(options.layers - 1);
      for (const double slope : alibi_slopes(heads)) {
        rates.push_back(std::exp(-slope * (1.0 - depth + 1e-5)));
      }
      break;
    }
  }
  return rates;
}

const char* decay_schedule_name(DecaySchedule schedule) {
  switch (schedule) {
    case DecaySchedule::kNone:
      return "none";
    case DecaySchedule::kRetNet:
      return "retnet";
    case DecaySchedule::kTransNormer:
      return "transnormer";
  }
  return "?";
}

}  // namespace rota::nn
