#pragma once
// gemmtune: one include for the public API.
#include "gemmtune/bench.h"
#include "gemmtune/candidate.h"
#include "gemmtune/device.h"
#include "gemmtune/epilogue.h"
#include "gemmtune/errors.h"
#include "gemmtune/problem.h"
#include "gemmtune/tuner.h"
#include "gemmtune/types.h"
