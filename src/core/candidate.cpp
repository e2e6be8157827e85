#include "gemmtune/candidate.h"

#include "gemmtune/errors.h"

namespace gemmtune {

Candidate Candidate::parse(const std::string& line) {
  const auto colon = line.find(':');
  if (colon == std::string::npos || colon == 0)
    throw Error("config '" + line + "': expected 'backend:config' (as printed by `gemmtune list`)");
  Candidate c{line.substr(0, colon), line.substr(colon + 1)};
  if (c.config.empty()) throw Error("config '" + line + "': empty config after '" + c.backend + ":'");
  for (char ch : line)
    if (ch == ' ' || ch == '\t' || ch == '\n') throw Error("config '" + line + "': contains whitespace");
  return c;
}

}  // namespace gemmtune
