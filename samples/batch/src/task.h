// The task file: what to ask the model about every document, and how.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace batch {

struct ChunkingSettings {
    int chunk_tokens = 1024;   // document tokens per chunk (a document this long or shorter is one job)
    int overlap = 64;          // tokens repeated from the end of one chunk at the start of the next
    int max_chunks = 32;       // longer documents become error records
    std::string map_instruction;      // per-chunk instruction (default: the task instruction)
    int map_max_tokens = 0;           // default: max_tokens
    bool map_use_schema = false;      // constrain per-chunk outputs with json_schema too
    std::string combine_instruction;  // instruction of the combine step ({document} = the chunk outputs)
};

struct Task {
    std::string instruction;      // user message; "{document}" marks where the text goes
    std::string system;           // optional system message
    std::string chat_template;    // optional Jinja template overriding the model's ("template")
    int max_tokens = 256;
    uint64_t seed = 42;
    // Sampler options by their ikllm names (temperature, top_k, top_p, min_p, repeat_penalty, ...).
    std::map<std::string, std::string> sampling;
    std::string json_schema;  // JSON text of the schema ("" = free text)
    ChunkingSettings chunking;
    // Input handling.
    std::string id_field = "id";
    std::string text_field = "text";
    uint64_t max_document_bytes = 8u << 20;
};

// Reads and checks a task file (JSON). Throws std::runtime_error with a clear message.
Task load_task(const std::string& path);

// The instruction text with the document placeholder removed (used to explain the combine step).
std::string instruction_without_placeholder(const std::string& instruction);

}  // namespace batch
