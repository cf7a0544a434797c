// W "ranks" as threads of this process sharing memory: a Communicator for testing the data-parallel
// code without MPI (so it also runs in builds without MPI and under the sanitizers).
#pragma once

#include <barrier>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "framework/distributed/communicator.h"

namespace rota::distributed::testing {

/// run(fn) calls fn(comm) on `world` threads, each with the Communicator of its rank. Sums are
/// computed in rank order like the real transports. abort() throws instead of exiting (tests
/// must not abort while other ranks wait).
class ThreadGroup {
 public:
  explicit ThreadGroup(int world) : world_(world), barrier_(world), slots_(world) {}

  void run(const std::function<void(Communicator&)>& fn) {
    std::vector<std::thread> threads;
    for (int r = 0; r < world_; ++r) {
      threads.emplace_back([this, r, &fn] {
        Member member(*this, r);
        fn(member);
      });
    }
    for (std::thread& t : threads) t.join();
  }

 private:
  class Member : public Communicator {
   public:
    Member(ThreadGroup& group, int rank) : group_(group), rank_(rank) {}
    int rank() const override { return rank_; }
    int world_size() const override { return group_.world_; }
    std::string description() const override { return "threads"; }
    void allreduce_sum(std::span<float> values) override { sum(values); }
    void allreduce_sum(std::span<double> values) override { sum(values); }
    void allreduce_sum(std::span<int64_t> values) override { sum(values); }
    void broadcast(std::span<std::byte> bytes, int root) override {
      group_.slots_[rank_] = bytes.data();
      group_.barrier_.arrive_and_wait();
      if (rank_ != root) std::memcpy(bytes.data(), group_.slots_[root], bytes.size());
      group_.barrier_.arrive_and_wait();
    }
    void barrier() override { group_.barrier_.arrive_and_wait(); }
    [[noreturn]] void abort(const std::string& message, int) override {
      throw std::logic_error("abort called: " + message);
    }

   private:
    template <typename T>
    void sum(std::span<T> values) {
      group_.slots_[rank_] = values.data();
      group_.barrier_.arrive_and_wait();
      std::vector<T> result(values.begin(), values.end());
      const T* first = static_cast<const T*>(group_.slots_[0]);
      std::copy(first, first + values.size(), result.begin());
      for (int r = 1; r < group_.world_; ++r) {
        const T* x = static_cast<const T*>(group_.slots_[r]);
        for (size_t i = 0; i < values.size(); ++i) result[i] = result[i] + x[i];
      }
      group_.barrier_.arrive_and_wait();  // everyone has read every buffer
      std::copy(result.begin(), result.end(), values.begin());
    }

    ThreadGroup& group_;
    int rank_;
  };

  int world_;
  std::barrier<> barrier_;
  std::vector<void*> slots_;  // each rank's buffer during a collective
};

}  // namespace rota::distributed::testing
