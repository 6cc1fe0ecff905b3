#pragma once
#include "dialects/graph/GraphOps.h"
