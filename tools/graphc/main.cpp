// graphc: compiles a model's whole training step for a memory budget (see docs/cli.md).
#include "tools/graphc/Driver.h"

int main(int argc, char **argv) { return graphc::runGraphcDriver(argc, argv); }
