// The engine objects behind session and sampler handles, for C-boundary files other than
// api_session.cpp (which defines the handle structs). Null handles give null.
#pragma once
#include "ikllm.h"

namespace ikllm {
class Session;
class Sampler;
namespace api {
Session* session_of(const ikllm_session* session);
Sampler* sampler_of(const ikllm_sampler* sampler);
}  // namespace api
}  // namespace ikllm
