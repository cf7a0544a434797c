// TensorBoard scalar event writer: Event protobufs framed as TFRecords.
#include "framework/io/tensorboard_writer.h"

#include <unistd.h>

#include <chrono>

#include <fmt/format.h>

#include "framework/base/error.h"
#include "framework/io/tensorboard_event.pb.h"
#include "framework/io/tfrecord.h"

namespace rota::io {
namespace {

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char buffer[256] = {};
  if (::gethostname(buffer, sizeof(buffer) - 1) != 0 || buffer[0] == '\0') return "localhost";
  return buffer;
}

}  // namespace

TensorBoardWriter::TensorBoardWriter(const std::filesystem::path& log_dir) {
  std::filesystem::create_directories(log_dir);
  const double now = unix_now();
  path_ =
      log_dir / fmt::format("events.out.tfevents.{}.{}", static_cast<int64_t>(now), host_name());
  // O_APPEND: a second writer in the same second (same name) appends whole records instead of
  // overwriting; TensorBoard reads the records in order either way.
  file_ = std::make_unique<AppendFile>(path_);
  tensorboard::Event event;
  event.set_wall_time(now);
  event.set_file_version("brain.Event:2");
  write_event(event.SerializeAsString());
}

TensorBoardWriter::~TensorBoardWriter() = default;

void TensorBoardWriter::add_scalar(const std::string& tag, double value, int64_t step,
                                   double wall_time) {
  add_scalars({{tag, value}}, step, wall_time);
}

void TensorBoardWriter::add_scalars(const std::vector<std::pair<std::string, double>>& values,
                                    int64_t step, double wall_time) {
  tensorboard::Event event;
  event.set_wall_time(wall_time > 0 ? wall_time : unix_now());
  event.set_step(step);
  auto* summary = event.mutable_summary();
  for (const auto& [tag, value] : values) {
    auto* entry = summary->add_value();
    entry->set_tag(tag);
    entry->set_simple_value(static_cast<float>(value));
  }
  write_event(event.SerializeAsString());
}

void TensorBoardWriter::write_event(const std::string& event_bytes) {
  // Whole records only: a failed write is rolled back and throws (AppendFile).
  file_->append(frame_tfrecord(event_bytes));
}

}  // namespace rota::io
