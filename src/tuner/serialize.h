#pragma once
// JSON forms of the value types, for the result cache, the worker protocol and the CLI's --json output.
#include <nlohmann/json.hpp>

#include "gemmtune/progress.h"
#include "gemmtune/tuner.h"

namespace gemmtune {

nlohmann::json to_json(const Problem& p);
Problem problem_from_json(const nlohmann::json& j);  // throws gemmtune::Error on a malformed document

nlohmann::json to_json(const CandidateResult& r);
CandidateResult result_from_json(const nlohmann::json& j);

nlohmann::json to_json(const DeviceInfo& d);

// A progress event: "kind", its text as "line", and the fields its kind sets (gemmtune/progress.h).
nlohmann::json to_json(const ProgressEvent& e);

}  // namespace gemmtune
