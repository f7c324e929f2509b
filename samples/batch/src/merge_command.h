// `ikllm-batch merge`: combines the results files of shards (or of several runs) into one.
#pragma once

namespace batch {

int merge_command(int argc, char** argv);

}  // namespace batch
