#pragma once
// parse() and validate() of a backend whose config is one canonical line (sm90, gemv): the candidate names this
// backend and its config parses (parse_canonical); the backend's own validity function accepts the parsed config and
// it prints back unchanged (validate_canonical).
#include <memory>
#include <string>

#include "backends/backend.h"
#include "gemmtune/candidate.h"
#include "gemmtune/errors.h"

namespace gemmtune {

// Config needs parse() (throwing gemmtune::Error) and str().
template <class Config>
std::shared_ptr<const BackendConfig> parse_canonical(const std::string& backend, const Candidate& c) {
  if (c.backend != backend) throw Error(backend + ": candidate is for backend '" + c.backend + "'");
  return std::make_shared<const BackendConfigOf<Config>>(Config::parse(c.config));
}

// `reason(cfg)` returns "" or "<backend>: <why>".
template <class Config, class Reason>
std::string validate_canonical(const std::string& backend, const Candidate& c, const Config& cfg, Reason&& reason) {
  // What is wrong with the config comes first: the canonical spelling of an invalid config helps nobody.
  if (std::string r = reason(cfg); !r.empty() || cfg.str() == c.config) return r;
  return backend + ": config '" + c.config + "' is not canonical (expected '" + cfg.str() + "')";
}

}  // namespace gemmtune
