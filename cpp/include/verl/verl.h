// Umbrella header: everything a C++ application needs from libverl (link verl::verl).
#pragma once

#include "verl/algo/advantage.h"
#include "verl/algo/agg_loss.h"
#include "verl/algo/functional.h"
#include "verl/algo/kl.h"
#include "verl/algo/policy_loss.h"
#include "verl/algo/value_loss.h"
#include "verl/core/config.h"
#include "verl/core/error.h"
#include "verl/core/json.h"
#include "verl/core/registry.h"
#include "verl/core/version.h"
#include "verl/data/data_proto.h"
#include "verl/data/row_plan.h"
#include "verl/tokenizer/tokenizer.h"
