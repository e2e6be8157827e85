#include "cuda/toolkit_library.h"

#include <filesystem>

#include "gemmtune/errors.h"

namespace gemmtune::cuda {

namespace {
std::string last_dl_error() {
  const char* e = dlerror();
  return e ? e : "unknown error";
}
}  // namespace

void* ToolkitLibrary::handle() const {
  std::call_once(once_, [this] {
    void* h = dlopen(soname_.c_str(), RTLD_NOW | RTLD_LOCAL);
    std::string why = h ? "" : last_dl_error();
#ifdef GEMMTUNE_CUDA_LIB_DIR
    // An installed library's RUNPATH names only its own directory: the toolkit it was built with, where it was.
    if (!h) {
      const std::string path = (std::filesystem::path(GEMMTUNE_CUDA_LIB_DIR) / soname_).string();
      h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!h) why += "; " + last_dl_error();
    }
#endif
    handle_ = h;
    if (!h) error_ = "cannot load " + what_ + " (" + soname_ + "): " + why;
  });
  if (!handle_) throw Error(error_);
  return handle_;
}

void* ToolkitLibrary::symbol(const char* name) const {
  void* h = handle();
  void* s = dlsym(h, name);
  if (!s) throw Error(what_ + " (" + soname_ + ") has no " + name + ": a CUDA toolkit older than gemmtune's");
  return s;
}

void* ToolkitLibrary::resident_symbol(const char* name) const {
  void* h = dlopen(soname_.c_str(), RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
  if (!h) return nullptr;
  void* s = dlsym(h, name);
  dlclose(h);  // drops the reference RTLD_NOLOAD took; the library stays loaded for whoever loaded it
  return s;
}

}  // namespace gemmtune::cuda
