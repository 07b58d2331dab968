// Umbrella header: everything a C++ application needs from libverl (link verl::verl).
#pragma once

#include "verl/core/config.h"
#include "verl/core/error.h"
#include "verl/core/json.h"
#include "verl/core/version.h"
#include "verl/data/data_proto.h"
#include "verl/data/row_plan.h"
#include "verl/tokenizer/tokenizer.h"
