// `ikllm-batch run`: every selected document through the model, one result line each.
#pragma once

namespace batch {

int run_command(int argc, char** argv);

}  // namespace batch
