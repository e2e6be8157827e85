#pragma once
// validate() of a backend whose config is one canonical line (sm90, gemv): the candidate names this backend, its
// config parses, the backend's own validity function accepts it, and it prints back unchanged.
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
  // What is wrong with the config comes first: the canonical spelling of an invalid config helps nobody.
  if (std::string r = reason(cfg); !r.empty() || cfg.str() == c.config) return r;
  return backend + ": config '" + c.config + "' is not canonical (expected '" + cfg.str() + "')";
}

}  // namespace gemmtune
