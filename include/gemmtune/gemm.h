#pragma once
// gemmtune: one include for the public API.
#include "gemmtune/types.h"  // first: it stops a pre-C++20 build with a clear message
#include "gemmtune/bench.h"
#include "gemmtune/candidate.h"
#include "gemmtune/device.h"
#include "gemmtune/epilogue.h"
#include "gemmtune/errors.h"
#include "gemmtune/problem.h"
#include "gemmtune/tuner.h"
