// gemmtune-worker: verifies and times candidates for the tuner in a separate process (see src/tuner/worker_client.h).
#include "tuner/worker_client.h"

int main() { return gemmtune::worker_main(); }
