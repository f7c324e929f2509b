// Builds the per-request ikllm_sampler from the request's sampling fields.
#pragma once
#include "ikllm.h"
#include "job.h"
#include "requests.h"

namespace server {

// Throws ApiError 400 for a grammar or schema the engine rejects. A request without a seed gets a
// random one, as OpenAI's API does.
SamplerPtr make_sampler(const ikllm_model* model, const SamplingParams& p);

}  // namespace server
