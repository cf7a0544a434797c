// Learning-rate schedules: linear warm-up, then constant, linear, cosine or inverse-sqrt decay.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

namespace rota::optim {

enum class ScheduleName { kConstant, kLinear, kCosine, kInverseSqrt };

/// "constant", "linear", "cosine", "inverse_sqrt".
const char* schedule_name_str(ScheduleName name);
/// Inverse of schedule_name_str; nullopt for an unknown name.
std::optional<ScheduleName> parse_schedule_name(std::string_view text);

/// Plain options (recipes translate into this).
struct ScheduleOptions {
  ScheduleName name = ScheduleName::kConstant;
  double lr = 1e-3;     // peak lr, reached at the end of warm-up
  double min_lr = 0.0;  // final lr of linear / cosine; floor of inverse_sqrt; unused otherwise
  int64_t warmup_steps = 0;
  double warmup_start_factor = 0.0;  // warm-up starts from lr * warmup_start_factor (at t = 0)
  int64_t total_steps = 0;           // linear / cosine: decay ends here (must exceed warmup_steps)
};

/// lr as a function of the update number t = 1, 2, ... (t is the count of optimizer steps
/// including the one about to be taken; t = 0 gives the warm-up start). With W = warmup_steps,
/// T = total_steps, s = warmup_start_factor, lr the peak:
///   t <= W (warm-up):   lr * (s + (1 - s) * t / W)      — first update lr*(s + (1-s)/W), never 0
///   t > W, by name:
///     constant:         lr
///     linear:           lr + (min_lr - lr) * p,                       p = min(1, (t-W)/(T-W))
///     cosine:           min_lr + (lr - min_lr) * (1 + cos(pi * p)) / 2
///     inverse_sqrt:     max(min_lr, lr * sqrt(W) / sqrt(t))  (fairseq; needs W >= 1)
/// So the peak is used at t = W, and linear / cosine reach min_lr exactly at t = T and stay.
class LrSchedule {
 public:
  explicit LrSchedule(const ScheduleOptions& options);
  virtual ~LrSchedule() = default;

  /// Absolute lr for update t (t >= 0).
  double lr(int64_t t) const;
  /// lr(t) / peak lr (0 when the peak is 0): for groups or callers that scale their own lr.
  double multiplier(int64_t t) const;
  const ScheduleOptions& options() const { return options_; }

 protected:
  /// lr for t > warmup_steps.
  virtual double after_warmup(int64_t t) const = 0;

  ScheduleOptions options_;
};

/// The schedule called kName (its formula above). The constructor sets options().name to kName
/// and checks what the formula needs: linear and cosine total_steps > warmup_steps and
/// min_lr <= lr, inverse_sqrt warmup_steps >= 1.
template <ScheduleName kName>
class NamedSchedule : public LrSchedule {
 public:
  explicit NamedSchedule(const ScheduleOptions& options);

 protected:
  double after_warmup(int64_t t) const override;
};

// Built once, in schedule.cpp.
extern template class NamedSchedule<ScheduleName::kConstant>;
extern template class NamedSchedule<ScheduleName::kLinear>;
extern template class NamedSchedule<ScheduleName::kCosine>;
extern template class NamedSchedule<ScheduleName::kInverseSqrt>;

using ConstantSchedule = NamedSchedule<ScheduleName::kConstant>;
using LinearDecaySchedule = NamedSchedule<ScheduleName::kLinear>;
using CosineDecaySchedule = NamedSchedule<ScheduleName::kCosine>;
using InverseSqrtSchedule = NamedSchedule<ScheduleName::kInverseSqrt>;

/// Builds the schedule named by options.name; invalid options throw naming the field.
std::unique_ptr<LrSchedule> make_schedule(const ScheduleOptions& options);

}  // namespace rota::optim
