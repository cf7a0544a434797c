// MPI collectives with a rank-ordered floating-point sum (see mpi_communicator.h).
#include "framework/distributed/mpi_communicator.h"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace rota::distributed {
namespace {

// MPI counts are int: larger buffers go in pieces of at most this many elements.
constexpr int64_t kMaxPiece = int64_t{1} << 28;

template <typename T>
MPI_Datatype mpi_type();
template <>
MPI_Datatype mpi_type<float>() {
  return MPI_FLOAT;
}
template <>
MPI_Datatype mpi_type<double>() {
  return MPI_DOUBLE;
}
template <>
MPI_Datatype mpi_type<int64_t>() {
  return MPI_INT64_T;
}

template <typename T>
void allreduce_in_pieces(std::span<T> values) {
  for (size_t start = 0; start < values.size(); start += kMaxPiece) {
    const int count = static_cast<int>(std::min<size_t>(kMaxPiece, values.size() - start));
    MPI_Allreduce(MPI_IN_PLACE, values.data() + start, count, mpi_type<T>(), MPI_SUM,
                  MPI_COMM_WORLD);
  }
}

// Sums `values` over the ranks in rank order: chunk r (elements [n r / W, n (r + 1) / W)) is
// summed on rank r from every rank's copy, then gathered back. n <= kMaxPiece.
template <typename T>
void rank_ordered_sum(std::span<T> values, int rank, int world, std::vector<std::byte>& scratch) {
  const int64_t n = static_cast<int64_t>(values.size());
  std::vector<int> counts(static_cast<size_t>(world)), offsets(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) {
    offsets[r] = static_cast<int>(n * r / world);
    counts[r] = static_cast<int>(n * (r + 1) / world) - offsets[r];
  }
  const int mine = counts[rank];
  scratch.resize(sizeof(T) * static_cast<size_t>(mine) * static_cast<size_t>(world));
  T* pieces = reinterpret_cast<T*>(scratch.data());  // [world, mine]: rank s's copy of my chunk
  std::vector<int> receive_counts(static_cast<size_t>(world), mine);
  std::vector<int> receive_offsets(static_cast<size_t>(world));
  for (int s = 0; s < world; ++s) receive_offsets[s] = s * mine;
  MPI_Alltoallv(values.data(), counts.data(), offsets.data(), mpi_type<T>(), pieces,
                receive_counts.data(), receive_offsets.data(), mpi_type<T>(), MPI_COMM_WORLD);
  T* chunk = values.data() + offsets[rank];
  for (int i = 0; i < mine; ++i) chunk[i] = pieces[i];
  for (int s = 1; s < world; ++s) {
    const T* piece = pieces + static_cast<ptrdiff_t>(s) * mine;
    for (int i = 0; i < mine; ++i) chunk[i] = chunk[i] + piece[i];
  }
  MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, values.data(), counts.data(), offsets.data(),
                 mpi_type<T>(), MPI_COMM_WORLD);
}

template <typename T>
void ordered_allreduce(std::span<T> values, int rank, int world, std::vector<std::byte>& scratch) {
  if (world == 1 || values.empty()) return;
  if (world == 2) return allreduce_in_pieces(values);
  for (size_t start = 0; start < values.size(); start += kMaxPiece) {
    const size_t count = std::min<size_t>(kMaxPiece, values.size() - start);
    rank_ordered_sum(values.subspan(start, count), rank, world, scratch);
  }
}

}  // namespace

MpiCommunicator::MpiCommunicator() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  ROTA_CHECK(initialized, "MpiCommunicator: MPI is not initialised");
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &world_);
}

std::string MpiCommunicator::description() const {
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(version, &length);
  std::string library(version, static_cast<size_t>(length));
  library = library.substr(0, library.find_first_of(",\n"));
  return fmt::format("MPI ({}), {} ranks", library, world_);
}

void MpiCommunicator::allreduce_sum(std::span<float> values) {
  ordered_allreduce(values, rank_, world_, scratch_);
}
void MpiCommunicator::allreduce_sum(std::span<double> values) {
  ordered_allreduce(values, rank_, world_, scratch_);
}
void MpiCommunicator::allreduce_sum(std::span<int64_t> values) {
  if (world_ > 1 && !values.empty()) allreduce_in_pieces(values);  // exact in any order
}

void MpiCommunicator::broadcast(std::span<std::byte> bytes, int root) {
  ROTA_CHECK(root >= 0 && root < world_, "broadcast: root {} is not in [0, {})", root, world_);
  for (size_t start = 0; start < bytes.size(); start += kMaxPiece) {
    const int count = static_cast<int>(std::min<size_t>(kMaxPiece, bytes.size() - start));
    MPI_Bcast(bytes.data() + start, count, MPI_BYTE, root, MPI_COMM_WORLD);
  }
}

void MpiCommunicator::barrier() {
  MPI_Barrier(MPI_COMM_WORLD);
}

void MpiCommunicator::abort(const std::string& message, int exit_code) {
  std::fflush(stdout);
  std::fprintf(stderr, "error (rank %d of %d): %s\nrota: stopping all %d ranks\n", rank_, world_,
               message.c_str(), world_);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);  // MPI_Abort does not return; this only satisfies [[noreturn]]
}

}  // namespace rota::distributed
