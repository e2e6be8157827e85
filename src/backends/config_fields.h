#pragma once
// A backend's config as a table of fields: each key declared once with its members, its spellings or integer range
// and whether it must be given and is printed. One routine parses, prints and checks the canonical form of every
// backend's `key=value,...` line, so that they all reject an unknown key, a repeated key or a bad value the same way.
//
//   key=value[,key=value...]   keys in any order, each at most once; the empty line gives no keys
//   value: one of the field's spellings, an integer in its range, or integers joined by 'x' ("128x256x64")
// Printing writes the fields in table order: the canonical line, which names candidates and keys caches.
#include <climits>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "gemmtune/candidate.h"
#include "gemmtune/errors.h"

namespace gemmtune::config {

// When a field is given and printed. required: in every line, always printed; printed: may be left out (its
// default), always printed; optional: may be left out, printed only when it differs from the default.
enum class Form { required, printed, optional };

// One spelling of a value (an enum's, a bool's): "coop" for false, "pingpong" for true.
struct Spelling {
  std::string text;
  int64_t value;
  template <class T>
  Spelling(std::string t, T v) : text(std::move(t)), value(static_cast<int64_t>(v)) {}
};

// One key, type-erased over its struct: up to three integer parts read and written through get / set.
struct Field {
  std::string key;
  Form form = Form::printed;
  int parts = 1;                // 2 or 3: integers joined by 'x'
  std::string shape;            // in messages about the parts, e.g. "MxNxK" (may be empty)
  std::vector<Spelling> names;  // the value's spellings; empty: a decimal integer
  bool ids = false;             // with names: a value without one prints as "#<n>"; "#<n>" and "<n>" parse
  int64_t lo = INT_MIN, hi = INT_MAX;  // each integer's range
  void (*get)(const void*, int64_t*) = nullptr;
  void (*set)(void*, const int64_t*) = nullptr;
};

// Parses `s` into `obj` (its fields' defaults already in place); throws "<backend>: bad config '<s>': <why>".
void parse_line(const std::string& backend, const std::vector<Field>& fields, const std::string& s, void* obj);
// The canonical line of `obj`; `dflt` holds the defaults that Form::optional fields leave out.
std::string print_line(const std::vector<Field>& fields, const void* obj, const void* dflt);
// "" when `given` is the canonical line, else "<backend>: config '<given>' is not canonical (expected '<canonical>')".
std::string canonical_reason(const std::string& backend, const std::string& given, const std::string& canonical);

namespace detail {
template <auto M>
struct Member;
template <class C, class T, T C::*M>
struct Member<M> {
  using Class = C;
  using Type = T;
};
template <auto M0, auto...>
struct First {
  using Class = typename Member<M0>::Class;
};
template <auto... M>
using ClassOf = typename First<M...>::Class;

template <auto... M>
void get(const void* obj, int64_t* out) {
  const auto& o = *static_cast<const ClassOf<M...>*>(obj);
  int i = 0;
  ((out[i++] = static_cast<int64_t>(o.*M)), ...);
}
template <auto... M>
void set(void* obj, const int64_t* in) {
  auto& o = *static_cast<ClassOf<M...>*>(obj);
  int i = 0;
  ((o.*M = static_cast<typename Member<M>::Type>(in[i++])), ...);
}
// A field of the members M: get and set through int64_t.
template <auto... M>
Field field(std::string key, Form form, int64_t lo, int64_t hi) {
  Field f;
  f.key = std::move(key);
  f.form = form;
  f.parts = int(sizeof...(M));
  f.lo = lo;
  f.hi = hi;
  f.get = get<M...>;
  f.set = set<M...>;
  return f;
}

}  // namespace detail

// A field of struct C (the builders below deduce C from the members).
template <class C>
struct FieldOf {
  Field f;
};

// An integer member in [lo, hi].
template <auto M>
FieldOf<detail::ClassOf<M>> integer(std::string key, Form form, int64_t lo = INT_MIN, int64_t hi = INT_MAX) {
  return {detail::field<M>(std::move(key), form, lo, hi)};
}
// Two or three integer members written "AxB" / "AxBxC" (`shape` names them in messages), each in [lo, hi].
template <auto... M>
FieldOf<detail::ClassOf<M...>> dims(std::string key, std::string shape, Form form, int64_t lo = INT_MIN,
                                    int64_t hi = INT_MAX) {
  static_assert(sizeof...(M) == 2 || sizeof...(M) == 3);
  Field f = detail::field<M...>(std::move(key), form, lo, hi);
  f.shape = std::move(shape);
  return {std::move(f)};
}
// An enum or bool member spelled by `names`.
template <auto M>
FieldOf<detail::ClassOf<M>> choice(std::string key, Form form, std::vector<Spelling> names) {
  Field f = detail::field<M>(std::move(key), form, INT_MIN, INT_MAX);
  f.names = std::move(names);
  return {std::move(f)};
}
// An integer id member spelled by `names` where it has one, else "#<id>" (a bare "<id>" parses too), in [lo, hi].
template <auto M>
FieldOf<detail::ClassOf<M>> id(std::string key, Form form, std::vector<Spelling> names, int64_t lo, int64_t hi) {
  Field f = detail::field<M>(std::move(key), form, lo, hi);
  f.names = std::move(names);
  f.ids = true;
  return {std::move(f)};
}

// The table of a backend's config struct C (default-constructible: its defaults are the fields' defaults).
template <class C>
class Fields {
 public:
  Fields(std::string backend, std::initializer_list<FieldOf<C>> fields) : backend_(std::move(backend)) {
    for (const FieldOf<C>& f : fields) fields_.push_back(f.f);
  }
  C parse(const std::string& s) const {
    C c{};
    parse_line(backend_, fields_, s, &c);
    return c;
  }
  std::string str(const C& c) const {
    static const C dflt{};
    return print_line(fields_, &c, &dflt);
  }

 private:
  std::string backend_;
  std::vector<Field> fields_;
};

// enumerate() of such a backend: its configs, best first, as candidates.
template <class Config>
std::vector<Candidate> candidates(const std::string& backend, const std::vector<Config>& configs) {
  std::vector<Candidate> out;
  for (const Config& c : configs) out.push_back(Candidate{backend, c.str()});
  return out;
}

// parse() of a backend whose config is one canonical line: the candidate names this backend and its config parses
// (Config::parse, throwing gemmtune::Error).
template <class Config>
std::shared_ptr<const BackendConfig> parse_candidate(const std::string& backend, const Candidate& c) {
  if (c.backend != backend) throw Error(backend + ": candidate is for backend '" + c.backend + "'");
  return std::make_shared<const BackendConfigOf<Config>>(Config::parse(c.config));
}

// validate() of such a backend: `reason(cfg)` ("" or "<backend>: <why>") first, since the canonical spelling of an
// invalid config helps nobody, then the canonical form (Config::str()).
template <class Config, class Reason>
std::string validate_canonical(const std::string& backend, const Candidate& c, const Config& cfg, Reason&& reason) {
  if (std::string r = reason(cfg); !r.empty()) return r;
  return canonical_reason(backend, c.config, cfg.str());
}

}  // namespace gemmtune::config
