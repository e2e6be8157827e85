// The shared config-line routine (config_fields.h): parse, print and the canonical check over a backend's table.
#include "backends/config_fields.h"

#include <algorithm>
#include <string_view>

#include "core/parse_int.h"

namespace gemmtune::config {
namespace {

std::string joined(const std::vector<Field>& fields, bool required_only) {
  std::string out;
  for (const Field& f : fields)
    if (!required_only || f.form == Form::required) out += (out.empty() ? "" : ", ") + f.key;
  return out;
}

// "" with `out` set, or why `v` is not a value of `f`.
std::string parse_value(const Field& f, std::string_view v, int64_t* out) {
  if (!f.names.empty()) {
    for (const Spelling& s : f.names)
      if (v == s.text) return out[0] = s.value, "";
    std::string allowed;
    for (size_t i = 0; i < f.names.size(); ++i)
      allowed += (i == 0 ? "" : i + 1 == f.names.size() ? " or " : ", ") + f.names[i].text;
    if (!f.ids) return f.key + " must be " + allowed + ", got '" + std::string(v) + "'";
    std::string_view num = v;
    if (!num.empty() && num.front() == '#') num.remove_prefix(1);
    if (num.empty() || num.find_first_not_of("0123456789") != std::string_view::npos)
      return f.key + " '" + std::string(v) + "' is not " + allowed + " or an id (#<n>)";
    if (std::string why = gemmtune::detail::parse_int(num, f.lo, f.hi, out[0]); !why.empty())
      return f.key + " '" + std::string(v) + "' " + why;
    return "";
  }
  if (f.parts == 1) {
    if (std::string why = gemmtune::detail::parse_int(v, f.lo, f.hi, out[0]); !why.empty())
      return f.key + " '" + std::string(v) + "' " + why;
    return "";
  }
  const std::string form = std::to_string(f.parts) + (f.lo >= 1 ? " positive" : "") + " integers joined by 'x'";
  const std::string want = f.key + " must be " + (f.shape.empty() ? form : f.shape + " (" + form + ")") + ", got '" +
                           std::string(v) + "'";
  size_t start = 0;
  for (int i = 0; i < f.parts; ++i) {
    const size_t x = i + 1 < f.parts ? v.find('x', start) : v.size();
    if (x == std::string_view::npos) return want;
    const std::string_view part = v.substr(start, x - start);
    if (std::string why = gemmtune::detail::parse_int(part, f.lo, f.hi, out[i]); !why.empty())
      return want + " ('" + std::string(part) + "' " + why + ")";
    start = x + 1;
  }
  return "";
}

std::string print_value(const Field& f, const int64_t* v) {
  for (const Spelling& s : f.names)
    if (s.value == v[0]) return s.text;
  std::string out(f.ids ? 1 : 0, '#');  // appended, not "#" + to_string(): GCC 12 -Wrestrict false positive
  for (int i = 0; i < f.parts; ++i) {
    if (i > 0) out += 'x';
    out += std::to_string(v[i]);
  }
  return out;
}

}  // namespace

void parse_line(const std::string& backend, const std::vector<Field>& fields, const std::string& s, void* obj) {
  auto bad = [&](const std::string& why) { throw Error(backend + ": bad config '" + s + "': " + why); };
  std::vector<bool> seen(fields.size());
  for (size_t start = 0; !s.empty() && start <= s.size();) {
    const size_t comma = std::min(s.find(',', start), s.size());
    const std::string item = s.substr(start, comma - start);
    start = comma + 1;
    const size_t eq = item.find('=');
    if (eq == std::string::npos) bad("expected key=value, got '" + item + "'");
    const std::string key = item.substr(0, eq);
    size_t i = 0;
    while (i < fields.size() && fields[i].key != key) ++i;
    if (i == fields.size()) bad("unknown key '" + key + "' (known: " + joined(fields, false) + ")");
    if (seen[i]) bad("'" + key + "' given twice");
    seen[i] = true;
    int64_t v[3] = {};
    if (std::string why = parse_value(fields[i], std::string_view(item).substr(eq + 1), v); !why.empty()) bad(why);
    fields[i].set(obj, v);
  }
  for (size_t i = 0; i < fields.size(); ++i)
    if (fields[i].form == Form::required && !seen[i])
      bad("missing key '" + fields[i].key + "' (required: " + joined(fields, true) + ")");
}

std::string print_line(const std::vector<Field>& fields, const void* obj, const void* dflt) {
  std::string out;
  for (const Field& f : fields) {
    int64_t v[3] = {}, d[3] = {};
    f.get(obj, v);
    f.get(dflt, d);
    if (f.form == Form::optional && std::equal(v, v + f.parts, d)) continue;
    out += (out.empty() ? "" : ",") + f.key + "=" + print_value(f, v);
  }
  return out;
}

std::string canonical_reason(const std::string& backend, const std::string& given, const std::string& canonical) {
  if (given == canonical) return "";
  return backend + ": config '" + given + "' is not canonical (expected '" + canonical + "')";
}

}  // namespace gemmtune::config
