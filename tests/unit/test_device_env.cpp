// GEMMTUNE_DEVICE names a GPU by its ordinal; anything else is an error, not GPU 0.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "cuda/driver.h"
#include "gemmtune/errors.h"

namespace {

struct EnvGuard {
  std::string saved;
  bool had;
  EnvGuard() : had(std::getenv("GEMMTUNE_DEVICE") != nullptr) {
    if (had) saved = std::getenv("GEMMTUNE_DEVICE");
  }
  ~EnvGuard() {
    if (had) setenv("GEMMTUNE_DEVICE", saved.c_str(), 1);
    else unsetenv("GEMMTUNE_DEVICE");
  }
};

}  // namespace

TEST(DeviceEnv, OrdinalIsParsedStrictly) {
  EnvGuard guard;
  unsetenv("GEMMTUNE_DEVICE");
  EXPECT_EQ(gemmtune::cuda::device_ordinal_from_env(), 0);
  setenv("GEMMTUNE_DEVICE", "3", 1);
  EXPECT_EQ(gemmtune::cuda::device_ordinal_from_env(), 3);
  for (const char* bad : {"junk", "1x", "-1", " 1", "99999999999"}) {
    setenv("GEMMTUNE_DEVICE", bad, 1);
    EXPECT_THROW(gemmtune::cuda::device_ordinal_from_env(), gemmtune::Error) << bad;
  }
}
