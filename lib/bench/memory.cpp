#include "bench/memory.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdint>
#include <vector>

#include <omp.h>

#include "kernels/backend.h"
#include "core/buffer.h"
#include "core/errors.h"
#ifdef MSTAR_WITH_CUDA
#include "kernels/cuda/device.h"
#endif

namespace mstar::bench {

namespace {
using Clock = std::chrono::steady_clock;

double gbs(int64_t bytes, Clock::time_point t0, Clock::time_point t1) {
  return static_cast<double>(bytes) / std::chrono::duration<double>(t1 - t0).count() / 1e9;
}

// One read of b[0, n) (every element 2.0), each thread's share as one
// stream. The bits summed as integers, which the compiler vectorises: a
// count of compares (b[i] != 0) stayed scalar and measured 6.0 against 9.4
// GB/s on one thread of the avx2 machine. The sum is checked, so the read
// cannot be dropped.
double read_gbs(const double* b, int64_t n, int threads) {
  const auto t0 = Clock::now();
  uint64_t bits = 0;
#pragma omp parallel for num_threads(threads) schedule(static) reduction(+ : bits)
  for (int64_t i = 0; i < n; ++i) bits += std::bit_cast<uint64_t>(b[i]);
  const auto t1 = Clock::now();
  MSTAR_ASSERT(bits == static_cast<uint64_t>(n) * std::bit_cast<uint64_t>(2.0), "read_gbs: the read array changed");
  return gbs(n * 8, t0, t1);
}

// The same read, each thread's share as kReadStreams runs walked together.
double read4_gbs(const double* b, int64_t n, int threads) {
  const auto t0 = Clock::now();
  uint64_t bits = 0;
#pragma omp parallel num_threads(threads) reduction(+ : bits)
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t lo = n * t / nt, hi = n * (t + 1) / nt, run = (hi - lo) / kReadStreams;
    for (int64_t i = 0; i < run; ++i)
      for (int64_t s = 0; s < kReadStreams; ++s) bits += std::bit_cast<uint64_t>(b[lo + s * run + i]);
    for (int64_t i = lo + kReadStreams * run; i < hi; ++i) bits += std::bit_cast<uint64_t>(b[i]);
  }
  const auto t1 = Clock::now();
  MSTAR_ASSERT(bits == static_cast<uint64_t>(n) * std::bit_cast<uint64_t>(2.0), "read4_gbs: the read array changed");
  return gbs(n * 8, t0, t1);
}
}  // namespace

Bandwidth measure_bandwidth(int threads, int64_t array_bytes, int repeats) {
  const int64_t n = array_bytes / 8;
  HostBuffer ab(DType::f32, Shape{2 * n}), bb(DType::f32, Shape{2 * n}), cb(DType::f32, Shape{2 * n});
  auto* a = static_cast<double*>(ab.data());
  auto* b = static_cast<double*>(bb.data());
  auto* c = static_cast<double*>(cb.data());
  // First touch from the threads that will stream the arrays.
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < n; ++i) a[i] = 1.0, b[i] = 2.0, c[i] = 0.5;
  std::vector<double> copy, triad, read, read4;
  for (int r = 0; r < repeats; ++r) {
    auto t0 = Clock::now();
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < n; ++i) c[i] = a[i];
    auto t1 = Clock::now();
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < n; ++i) a[i] = b[i] + 3.0 * c[i];
    auto t2 = Clock::now();
    copy.push_back(gbs(2 * n * 8, t0, t1));
    triad.push_back(gbs(3 * n * 8, t1, t2));
    read.push_back(read_gbs(b, n, threads));
    read4.push_back(read4_gbs(b, n, threads));
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  Bandwidth bw;
  bw.copy_gbs = *std::max_element(copy.begin(), copy.end());
  bw.triad_gbs = *std::max_element(triad.begin(), triad.end());
  bw.copy_median_gbs = median(copy);
  bw.triad_median_gbs = median(triad);
  bw.read_gbs = *std::max_element(read.begin(), read.end());
  bw.read_median_gbs = median(read);
  bw.read4_gbs = *std::max_element(read4.begin(), read4.end());
  bw.read4_median_gbs = median(read4);
  bw.array_bytes = n * 8;
  bw.threads = threads;
  return bw;
}

ReadProbe::ReadProbe(int threads, int64_t array_bytes)
    : threads_(threads), n_(array_bytes / 8), b_(DType::f32, Shape{2 * n_}) {
  MSTAR_ASSERT(threads >= 1 && n_ >= 1, "ReadProbe: a thread and an element at least");
  auto* b = static_cast<double*>(b_.data());
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < n_; ++i) b[i] = 2.0;
}

ReadProbe::Reads ReadProbe::measure() const {
  const auto* b = static_cast<const double*>(b_.data());
  Reads r;
  r.read_gbs = read_gbs(b, n_, threads_);
  r.read4_gbs = read4_gbs(b, n_, threads_);
  return r;
}

DeviceBandwidth measure_device_bandwidth(int64_t array_bytes, int repeats) {
  std::string why;
  if (!backend_available(Backend::cuda, &why)) throw ConfigError("--backend cuda: " + why);
#ifdef MSTAR_WITH_CUDA
  const kernels::CudaBandwidth b = kernels::cuda_bandwidth(array_bytes, repeats);
  DeviceBandwidth out;
  out.copy_gbs = b.copy_gbs;
  out.triad_gbs = b.triad_gbs;
  out.copy_median_gbs = b.copy_median_gbs;
  out.triad_median_gbs = b.triad_median_gbs;
  out.array_bytes = b.array_bytes;
  out.device = b.device;
  return out;
#else
  (void)array_bytes;
  (void)repeats;
  throw ConfigError("--backend cuda: " + why);
#endif
}

}  // namespace mstar::bench
