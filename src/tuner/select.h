#pragma once
// Which timed candidates are raced again side by side, and which one wins (the tuner's decisions, kept apart from the
// GPU work so they are tested without one).
#include <vector>

#include "gemmtune/tuner.h"

namespace gemmtune {

// Indices of the candidates (status ok) to time again side by side: the 4 fastest by their first numbers and the
// others within 8% of the 4th fastest, at most 6; all of them for an explicit list (`whole_list`). Empty when fewer
// than two qualify.
std::vector<size_t> runoff_members(const std::vector<CandidateResult>& results, bool whole_list);

// The winner's index, or -1: the fastest candidate with status ok among `raced` when that is not empty (numbers
// taken side by side, in one power state of the GPU), else among all.
int pick_winner(const std::vector<CandidateResult>& results, const std::vector<size_t>& raced);

}  // namespace gemmtune
