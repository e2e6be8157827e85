#pragma once
// validate() of a backend whose config is one canonical line (sm90, gemv): the candidate names this backend, its
// config parses and prints back unchanged, then the backend's own validity function decides.
#include <string>

#include "gemmtune/candidate.h"
#include "gemmtune/errors.h"

namespace gemmtune {

// `reason(cfg)` returns "" or "<backend>: <why>". Config needs a default constructor, parse() and str().
template <class Config, class Reason>
std::string validate_canonical(const std::string& backend, const Candidate& c, Reason&& reason) {
  if (c.backend != backend) return backend + ": candidate is for backend '" + c.backend + "'";
  Config cfg;
  try {
    cfg = Config::parse(c.config);
  } catch (const Error& e) {
    return e.what();
  }
  if (cfg.str() != c.config)
    return backend + ": config '" + c.config + "' is not canonical (expected '" + cfg.str() + "')";
  return reason(cfg);
}

}  // namespace gemmtune
