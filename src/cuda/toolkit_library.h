#pragma once
// The CUDA toolkit's NVRTC and cuBLASLt, opened with dlopen on first use instead of linked: a process that needs
// neither (a result-cache hit of `gemmtune tune`, `list`, `cache`, a cached winner of a backend that compiles nothing)
// does not pay for loading them at its start (cuBLASLt is half a gigabyte: 55-170 ms to map and relocate on a 2-core
// host, NVRTC 6-18 ms). Each user lists the functions it calls and reaches them through a table, as cuda/driver.h does
// for libcuda (jit.cpp for NVRTC, backends/cublaslt/cublaslt_library.h for cuBLASLt).
#include <dlfcn.h>

#include <mutex>
#include <string>

namespace gemmtune::cuda {

class ToolkitLibrary {
 public:
  // `soname` e.g. "libcublasLt.so.13"; `what` names it in errors ("cuBLASLt").
  ToolkitLibrary(std::string soname, std::string what) : soname_(std::move(soname)), what_(std::move(what)) {}
  ToolkitLibrary(const ToolkitLibrary&) = delete;
  ToolkitLibrary& operator=(const ToolkitLibrary&) = delete;

  // The library, opened on the first call (thread-safe) by its soname, which finds a copy the process has loaded
  // already (PyTorch's), then searches as the linker would have for a linked library (LD_LIBRARY_PATH, this library's
  // RUNPATH, the loader's cache); else from the lib directory of the toolkit gemmtune was built with. Throws
  // gemmtune::Error naming the library and the loader's reason.
  void* handle() const;
  // `name` in the library (opening it); throws gemmtune::Error when it is missing (a toolkit too old).
  void* symbol(const char* name) const;
  // A function of a library that the process has loaded already (by anyone, under this soname), else nullptr.
  // Loads nothing.
  void* resident_symbol(const char* name) const;
  const std::string& soname() const { return soname_; }

 private:
  std::string soname_, what_;
  mutable std::once_flag once_;
  mutable void* handle_ = nullptr;
  mutable std::string error_;
};

// A table's member for the library function `name`, with its declared type.
#define GEMMTUNE_TOOLKIT_DECL(name) decltype(&::name) name = nullptr;
// Fills that member of table `t` from library `lib` (the names a table's loader gives them).
#define GEMMTUNE_TOOLKIT_LOAD(name) t.name = reinterpret_cast<decltype(&::name)>(lib.symbol(#name));

}  // namespace gemmtune::cuda
