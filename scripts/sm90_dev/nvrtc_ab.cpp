// nvrtc_ab: interleaved NVRTC compile timing of several variants (the 2-core host's timing drifts by +-10% over
// minutes, so variants are compared round-robin in one process, never in separate runs).
//   nvrtc_ab ROUNDS SRC INCDIR FLAGS [SRC INCDIR FLAGS ...]    FLAGS: extra NVRTC options separated by spaces, or "-"
// Prints per variant the median and minimum wall and CPU milliseconds over the rounds (NVRTC_AB_LOG=1: and each
// compile's program log, e.g. ptxas -v's registers and spills).
// Build: g++ -O2 -o nvrtc_ab nvrtc_ab.cpp -I/usr/local/cuda/include -L/usr/local/cuda/lib64 -lnvrtc
// Sources: GEMMTUNE_DUMP_DIR=dir gemmtune compile ... writes each candidate's generated .cu there.
#include <nvrtc.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

double cpu_ms() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}

struct Variant {
  std::string source, include, flag;
  std::vector<double> wall, cpu;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5 || (argc - 2) % 3 != 0) {
    std::fprintf(stderr, "usage: %s ROUNDS SRC INCDIR FLAG [SRC INCDIR FLAG ...]\n", argv[0]);
    return 2;
  }
  const int rounds = std::atoi(argv[1]);
  std::vector<Variant> vs;
  for (int i = 2; i + 2 < argc; i += 3) {
    std::ifstream f(argv[i]);
    if (!f) {
      std::fprintf(stderr, "cannot read %s\n", argv[i]);
      return 2;
    }
    std::stringstream ss;
    ss << f.rdbuf();
    vs.push_back({ss.str(), std::string("-I") + argv[i + 1], argv[i + 2], {}, {}});
  }
  for (int r = 0; r < rounds; ++r) {
    for (auto& v : vs) {
      std::vector<const char*> opts = {"--gpu-architecture=sm_90a", "-default-device", "--ptxas-options=-v",
                                       "-std=c++17", "--no-cache", "-I/usr/local/cuda/include",
                                       "-I/usr/local/cuda/include/cccl", v.include.c_str()};
      std::vector<std::string> extra;
      if (v.flag != "-") {
        std::istringstream fs(v.flag);
        for (std::string f; fs >> f;) extra.push_back(f);
      }
      for (const auto& f : extra) opts.push_back(f.c_str());
      const auto t0 = std::chrono::steady_clock::now();
      const double c0 = cpu_ms();
      nvrtcProgram prog;
      nvrtcCreateProgram(&prog, v.source.c_str(), "k.cu", 0, nullptr, nullptr);
      const nvrtcResult res = nvrtcCompileProgram(prog, static_cast<int>(opts.size()), opts.data());
      v.wall.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      v.cpu.push_back(cpu_ms() - c0);
      if (res != NVRTC_SUCCESS) {
        size_t n = 0;
        nvrtcGetProgramLogSize(prog, &n);
        std::string log(n, '\0');
        nvrtcGetProgramLog(prog, log.data());
        std::fprintf(stderr, "compile failed:\n%s\n", log.c_str());
        return 1;
      }
      if (std::getenv("NVRTC_AB_LOG")) {  // the program log (ptxas -v: registers, spills) of every compile
        size_t n = 0;
        nvrtcGetProgramLogSize(prog, &n);
        std::string log(n, '\0');
        nvrtcGetProgramLog(prog, log.data());
        std::fprintf(stderr, "variant %zu log:\n%s\n", static_cast<size_t>(&v - vs.data()), log.c_str());
      }
      nvrtcDestroyProgram(&prog);
    }
  }
  for (size_t i = 0; i < vs.size(); ++i) {
    auto& v = vs[i];
    std::sort(v.wall.begin(), v.wall.end());
    std::sort(v.cpu.begin(), v.cpu.end());
    std::printf("variant %zu: wall median %.1f min %.1f | cpu median %.1f min %.1f\n", i, v.wall[v.wall.size() / 2],
                v.wall[0], v.cpu[v.cpu.size() / 2], v.cpu[0]);
  }
  return 0;
}
