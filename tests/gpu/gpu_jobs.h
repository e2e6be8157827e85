#pragma once
// Compile-then-run correctness jobs for GPU tests of any JIT backend: every (problem, candidate) is compiled in
// parallel first, then launched `launches` times (default 2: the second reuses what the first set up, e.g. sm90's
// tensor maps, and meets the device state the first left, e.g. counts that must be back to zero) on fresh random
// operands (epilogue operands included), D poisoned with NaN (padding too) before every launch, launches 1-2 on one
// stream and 3-4 on another; D is checked against the double-precision CPU reference of gpu_test_util.h: normalized
// error at most 1e-2, no byte outside D's logical elements written. A kernel that spills is skipped (printed, not run):
// the tuner rejects it from its compile report (src/tuner/pipeline.h), so it is never picked.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backends/backend.h"
#include "cuda/memory.h"
#include "gemmtune/device.h"
#include "gpu_test_util.h"
#include "jit/thread_pool.h"

namespace gemmtune::test {

constexpr double kJobTolerance = 1e-2;

struct Job {
  Problem p;
  Candidate cand;
  CompileResult cr;
  std::string compile_error;
  int launches = 2;
};

inline cuda::DeviceBuffer upload(const std::vector<uint8_t>& v) {
  if (v.empty()) return {};
  cuda::DeviceBuffer buf(v.size());
  buf.upload(v.data(), v.size());
  return buf;
}

// The result of a job whose kernel spills: never tuned, so not run.
inline std::string spill_skip(const CompileResult& cr) {
  return "SKIP spills " + std::to_string(cr.spill_bytes) + " bytes";
}
inline bool is_skip(const std::string& r) { return r.rfind("SKIP", 0) == 0; }

// Runs one compiled job; "" or a failure description ("SKIP ..." for a kernel that spills).
inline std::string run_job(const Backend& be, const Job& j, std::mt19937_64& rng) {
  const Problem& p = j.p;
  if (!j.compile_error.empty()) return "compile: " + j.compile_error;
  if (j.cr.spill_bytes > 0) return spill_skip(j.cr);
  auto exe = be.load(resolve(p), j.cand, j.cr);
  const auto a = random_operand(p, Which::A, rng), b = random_operand(p, Which::B, rng);
  std::vector<uint8_t> c;
  if (p.beta != 0.0f) c = random_operand(p, Which::C, rng);
  const EpilogueData e = random_epilogue(p, rng);
  const std::vector<double> ref = apply_epilogue(p, reference_d(p, a, b, c), e);
  auto da = upload(a), db = upload(b), dc = upload(c), bias = upload(e.bias), res = upload(e.residual),
       rs = upload(e.row_scale), cs = upload(e.col_scale);
  std::vector<uint8_t> d = poisoned_operand(p, Which::D);
  auto dd = upload(d);
  GemmArgs args{da.get(), db.get(), c.empty() ? nullptr : dc.get(), dd.get()};
  args.bias = bias.get(), args.residual = res.get(), args.row_scale = rs.get(), args.col_scale = cs.get();
  cuda::StreamOwner s[2];
  for (int i = 0; i < j.launches; ++i) {
    dd.upload(d.data(), d.size());  // the poison, before every launch: each must write all of D
    exe->launch(args, s[(i / 2) % 2].get());
    s[(i / 2) % 2].sync();
  }
  dd.download(d.data(), d.size());
  const double err = normalized_error(p, d, ref);
  const int64_t outside = written_outside(p, d);
  if (!(err <= kJobTolerance) || outside)
    return "err=" + std::to_string(err) + " bytes-written-outside=" + std::to_string(outside);
  return "";
}

// Compiles every job on every core (a failure is kept in the job), then runs each and expects it correct; prints the
// counts. Returns how many ran.
inline size_t run_jobs(const Backend& be, std::vector<Job>& jobs) {
  const DeviceInfo dev = current_device();
  const auto t0 = std::chrono::steady_clock::now();
  jit::parallel_for(jobs.size(), int(std::max(2u, std::thread::hardware_concurrency())), [&](size_t i) {
    try {
      jobs[i].cr = be.compile(resolve(jobs[i].p), jobs[i].cand, dev);
    } catch (const std::exception& e) {
      jobs[i].compile_error = e.what();
    }
  });
  std::printf("%zu jobs compiled in %.1f s\n", jobs.size(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  std::mt19937_64 rng(std::random_device{}());
  int failed = 0, skipped = 0;
  for (const Job& j : jobs) {
    std::string r;
    try {
      r = run_job(be, j, rng);
    } catch (const std::exception& e) {
      r = std::string("threw: ") + e.what();
    }
    if (is_skip(r)) {
      ++skipped;
      std::printf("skip %s on %s: %s\n", j.cand.str().c_str(), j.p.str().c_str(), r.c_str());
      continue;
    }
    if (!r.empty()) ++failed;
    EXPECT_EQ(r, "") << j.cand.str() << " on " << j.p.str();
  }
  std::printf("%zu jobs run, %d failed, %d skipped (spills)\n", jobs.size() - skipped, failed, skipped);
  EXPECT_GT(jobs.size() - skipped, 0u) << "every job was skipped";
  return jobs.size() - skipped;
}

}  // namespace gemmtune::test
