#pragma once
// A core header that includes a model header: against the layer order.
#include "models/high.h"
