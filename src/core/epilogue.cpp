#include "gemmtune/epilogue.h"

#include <sstream>

#include "gemmtune/errors.h"

namespace gemmtune {

std::string Epilogue::key() const {
  if (ops.empty()) return "none";
  std::string s;
  for (size_t i = 0; i < ops.size(); ++i) s += (i ? "," : "") + ops[i];
  return s;
}

Epilogue parse_epilogue(const std::string& spec) {
  Epilogue e;
  if (spec.empty() || spec == "none") return e;
  std::stringstream ss(spec);
  std::string op;
  while (std::getline(ss, op, ',')) {
    if (op.empty()) throw Error("epilogue '" + spec + "': empty op in the chain");
    e.ops.push_back(op);
  }
  return e;  // which ops exist and which chains are valid is Problem::check()'s job
}

}  // namespace gemmtune
