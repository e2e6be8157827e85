#pragma once
#include <string>

#include "gemmtune/types.h"

namespace gemmtune {

// A backend plus that backend's config, printable as one line "backend:config" that the CLI accepts back
// (`--config`). The config string is owned and parsed by its backend; it is canonical, so equal strings are
// equal configs.
struct Candidate {
  std::string backend;  // "sm90", "cublaslt"
  std::string config;   // e.g. "tile=128x256x64,stages=4,cluster=2x1,sched=coop,raster=m8"

  std::string str() const { return backend + ":" + config; }
  static Candidate parse(const std::string& line);  // throws gemmtune::Error on a malformed line
  bool operator==(const Candidate&) const = default;
};

}  // namespace gemmtune
