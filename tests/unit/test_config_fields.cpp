// The shared config-line routine (src/backends/config_fields.h) on a table of its own, and the one behaviour every
// backend's parser gets from it: a repeated or unknown key is refused with the same words.
#include <gtest/gtest.h>

#include <string>

#include "backends/config_fields.h"
#include "backends/cublaslt/cublaslt_config.h"
#include "backends/cutlass/cutlass_config.h"
#include "backends/gemv/gemv_config.h"
#include "backends/sm90/sm90_config.h"
#include "backends/triton/triton_config.h"
#include "gemmtune/errors.h"

using namespace gemmtune;

namespace {

enum class Mode { off, on, auto_ };

struct Knobs {
  int size = 4;
  int m = 1, n = 2, k = 3;
  Mode mode = Mode::off;
  bool flag = false;
  uint16_t id = 0;
  int extra = 7;
};

const config::Fields<Knobs>& knobs() {
  using config::Form;
  static const config::Fields<Knobs> f{
      "knobs",
      {config::integer<&Knobs::size>("size", Form::required, 1, 64),
       config::dims<&Knobs::m, &Knobs::n, &Knobs::k>("tile", "MxNxK", Form::printed, 1),
       config::choice<&Knobs::mode>("mode", Form::printed, {{"off", Mode::off}, {"on", Mode::on}, {"auto", Mode::auto_}}),
       config::choice<&Knobs::flag>("flag", Form::optional, {{"0", false}, {"1", true}}),
       config::id<&Knobs::id>("id", Form::optional, {{"none", 0}, {"big", 9}}, 0, 65535),
       config::integer<&Knobs::extra>("extra", Form::optional)}};
  return f;
}

// The message of the Error that parsing `s` throws ("parsed" when it parses).
std::string why(const std::string& s) {
  try {
    knobs().parse(s);
  } catch (const Error& e) {
    return e.what();
  }
  return "parsed";
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST(ConfigFields, PrintsInTableOrderAndParsesBack) {
  Knobs k;
  EXPECT_EQ(knobs().str(k), "size=4,tile=1x2x3,mode=off");  // optional fields at their default are left out
  k.flag = true;
  k.id = 9;
  k.extra = -2;
  k.mode = Mode::auto_;
  EXPECT_EQ(knobs().str(k), "size=4,tile=1x2x3,mode=auto,flag=1,id=big,extra=-2");
  k.id = 300;
  const std::string s = knobs().str(k);
  EXPECT_EQ(s, "size=4,tile=1x2x3,mode=auto,flag=1,id=#300,extra=-2");  // an id without a name
  const Knobs back = knobs().parse(s);
  EXPECT_EQ(knobs().str(back), s);
  EXPECT_EQ(back.id, 300);
  EXPECT_EQ(back.k, 3);
  // Any order, optional fields given at their default, a bare id: the canonical line is the printed one.
  EXPECT_EQ(knobs().str(knobs().parse("id=300,flag=0,extra=7,size=4")), "size=4,tile=1x2x3,mode=off,id=#300");
  EXPECT_EQ(knobs().parse("size=1,id=none").id, 0);
}

TEST(ConfigFields, BadLinesNameTheBackendKeyAndWhatIsAllowed) {
  EXPECT_TRUE(has(why("size=4,size=4"), "knobs: bad config 'size=4,size=4': 'size' given twice")) << why("size=4,size=4");
  EXPECT_TRUE(has(why("size=4,colour=red"), "unknown key 'colour' (known: size, tile, mode, flag, id, extra)"));
  EXPECT_TRUE(has(why("tile=1x1x1"), "missing key 'size' (required: size)"));
  EXPECT_TRUE(has(why("size=4,mode=maybe"), "mode must be off, on or auto, got 'maybe'"));
  EXPECT_TRUE(has(why("size=4,flag=2"), "flag must be 0 or 1, got '2'"));
  EXPECT_TRUE(has(why("size=65"), "size '65' is out of range (at most 64)"));
  EXPECT_TRUE(has(why("size=4x"), "size '4x' is not an integer"));
  EXPECT_TRUE(has(why("size=4,tile=1x2"), "tile must be MxNxK (3 positive integers joined by 'x'), got '1x2'"));
  EXPECT_TRUE(has(why("size=4,tile=1x0x2"), "('0' is out of range (at least 1))"));
  EXPECT_TRUE(has(why("size=4,id=huge"), "id 'huge' is not none or big or an id (#<n>)"));
  EXPECT_TRUE(has(why("size=4,id=#70000"), "id '#70000' is out of range (at most 65535)"));
  EXPECT_TRUE(has(why("size=4,extra=99999999999"), "is out of range"));
  EXPECT_TRUE(has(why("size=4,"), "expected key=value, got ''"));
  EXPECT_TRUE(has(why(",size=4"), "expected key=value, got ''"));
  EXPECT_TRUE(has(why("size"), "expected key=value, got 'size'"));
  EXPECT_TRUE(has(why(""), "missing key 'size'"));  // the empty line gives no keys
}

TEST(ConfigFields, CanonicalReason) {
  EXPECT_EQ(config::canonical_reason("knobs", "size=4,tile=1x2x3,mode=off", "size=4,tile=1x2x3,mode=off"), "");
  EXPECT_EQ(config::canonical_reason("knobs", "tile=1x2x3,size=4", "size=4,tile=1x2x3,mode=off"),
            "knobs: config 'tile=1x2x3,size=4' is not canonical (expected 'size=4,tile=1x2x3,mode=off')");
}

// Every backend's key=value config refuses a repeated and an unknown key in the same words.
TEST(ConfigFields, EveryBackendRefusesRepeatedAndUnknownKeysAlike) {
  auto expect = [](auto parse, const std::string& backend, const std::string& line, const std::string& key) {
    for (const std::string& s : {line + "," + key + "=1", line + ",bogus=1"}) {
      try {
        parse(s);
        ADD_FAILURE() << s << " parsed";
      } catch (const Error& e) {
        const bool twice = s.find("bogus") == std::string::npos;
        EXPECT_TRUE(has(e.what(), backend + ": bad config '" + s + "': " +
                                      (twice ? "'" + key + "' given twice" : "unknown key 'bogus' (known: ")))
            << e.what();
      }
    }
  };
  expect([](const std::string& s) { return sm90::Config::parse(s); }, "sm90",
         "tile=128x256x64,stages=4,cluster=1x1,sched=coop,raster=m,group=8", "stages");
  expect([](const std::string& s) { return gemv::Config::parse(s); }, "gemv", "vec=m,warps=8,rows=2,ksplit=4,unroll=4",
         "warps");
  expect([](const std::string& s) { return triton::Config::parse(s); }, "triton",
         "tmpl=tma,bm=128,bn=256,bk=64,stages=3,warps=8,gm=8", "gm");
  expect([](const std::string& s) { return cutlass_be::Config::parse(s); }, "cutlass",
         "sched=coop,tile=128x256x64,cluster=2x1", "sched");
  expect([](const std::string& s) { return cublaslt::AlgoConfig::parse(s); }, "cublaslt",
         "algo=66,tile=128x256,stages=64x4,splitk=1,red=0,swizzle=0,custom=0,cluster=2x1x1,inner=0", "inner");
}
