#pragma once
// Every environment variable gemmtune reads, in one table, read through one module: the names, meanings and bounds
// live here and in docs/CLI.md's table (tests/unit/test_env.cpp checks that the two agree and that nothing else in
// the library or the CLI calls getenv). Read on every call, not cached: tests and long-lived processes change them.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gemmtune::env {

struct Variable {
  const char* name;
  const char* meaning;  // one line, as docs/CLI.md says it
};

// The table, in docs/CLI.md's order.
const std::vector<Variable>& variables();

// The value of `name`, nullopt when unset or empty. `name` must be in the table (a misspelt name is a bug, and
// gemmtune::Error says so).
std::optional<std::string> get(const char* name);

// On unless unset, empty or "0".
bool flag(const char* name);

// An integer in [lo, hi]: `fallback` when unset; anything else throws gemmtune::Error naming the variable, its value
// and the range.
int64_t integer(const char* name, int64_t fallback, int64_t lo, int64_t hi);

// A number of seconds (or another quantity) in (0, hi]: `fallback` when unset; a value that is not a finite number in
// range throws gemmtune::Error naming the variable.
double positive(const char* name, double fallback, double hi);

}  // namespace gemmtune::env
