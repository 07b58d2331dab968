// A Python-free program on libverl: builds verl's config with overrides, makes a GRPO-shaped
// batch (prompts repeated n times, grouped by uid), splits it into mini-batches and checks it.
#include <cstdlib>
#include <iostream>

#include <torch/torch.h>
#include <verl/verl.h>

int main() {
  try {
    verl::Config config = verl::Config::load("", {"algorithm.adv_estimator=grpo", "actor_rollout_ref.rollout.n=4",
                                                  "data.train_batch_size=2"});
    const int64_t n = config.get_as<int64_t>("actor_rollout_ref.rollout.n");
    const int64_t prompts = config.get_as<int64_t>("data.train_batch_size");

    verl::DataProto batch = verl::DataProto::from_dict(
        {{"input_ids", torch::arange(prompts * 3).reshape({prompts, 3})}},
        {{"uid", {"prompt-a", "prompt-b"}}}, {{"temperature", 1.0}});
    verl::DataProto rollouts = batch.repeat(n, /*interleave=*/true);
    std::vector<verl::DataProto> minibatches = rollouts.make_iterator(/*mini_batch_size=*/4, /*epochs=*/1, /*seed=*/7);

    std::cout << "libverl " << verl::version() << ": " << config.get_as<std::string>("algorithm.adv_estimator")
              << ", " << rollouts.size() << " rollouts in " << minibatches.size() << " mini-batches\n";
    const bool ok = rollouts.size() == prompts * n && minibatches.size() == 2 &&
                    rollouts.column("uid")[n - 1] == "prompt-a" && rollouts.column("uid")[n] == "prompt-b";
    try {
      verl::Config::load("", {"actor_rollout_ref.rollout.nn=5"});
      std::cerr << "expected a ConfigError for an unknown key\n";
      return EXIT_FAILURE;
    } catch (const verl::ConfigError& e) {
      std::cout << "unknown key rejected: " << e.what() << "\n";
    }
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
  } catch (const verl::Error& e) {
    std::cerr << "verl error: " << e.what() << "\n";
    return EXIT_FAILURE;
  }
}
