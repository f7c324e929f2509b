#include "model/device_placement.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <new>
#include <set>
#include <string>

#include "core/error.h"
#include "core/log.h"
#include "model/tensor_placement.h"
#include "quant/type_traits.h"
#include "quant/unpack_interleaved.h"
#include "registry.h"

namespace ikllm {

namespace {

int32_t layer_of(const char* name) {
    int layer = -1;
    if (std::sscanf(name, "blk.%d.", &layer) == 1) return layer;
    return -1;
}

uint64_t tensor_bytes(const Tensor& t) { return (uint64_t)t.nb[1] * (uint64_t)t.n_rows(); }


// Uploads n rows of an interleaved type as rows of its plain type `to`, converted in slices of
// whole row groups (about 64 MiB at a time, not one host copy of the whole tensor).
void upload_converted(backend::Backend* gpu, uint8_t* dev, const Tensor& t, uint32_t to) {
    const quant::TypeTraits& from_t = *quant::find_type(t.type);
    const size_t rb = quant::row_bytes(from_t, t.ne[0]);
    const int64_t group = from_t.interleave, rows = t.n_rows();
    const int64_t step = std::max<int64_t>(group, ((int64_t)(64u << 20) / (int64_t)std::max<size_t>(rb, 1)) / group * group);
    std::vector<uint8_t> plain(rb * (size_t)std::min(step, rows));
    const uint8_t* src = static_cast<const uint8_t*>(t.data);
    for (int64_t r = 0; r < rows; r += step) {
        const int64_t n = std::min(step, rows - r);
        if (!quant::unpack_rows(t.type, src + rb * (size_t)r, plain.data(), t.ne[0], n))
            fail(Status::internal, std::string(t.name) + ": converting " + from_t.name + " to " + quant::find_type(to)->name +
                 " failed");
        gpu->upload(dev + rb * (size_t)r, plain.data(), rb * (size_t)n);
    }
}

// One device buffer per GPU for the weights placed there. A tensor that is a view of another's
// bytes (deepseek2's 3-D view of a split attn_k_b) shares its device copy. Row-interleaved
// tensors go up in their plain type (gpu_weight_form), each with a span of its own.
void upload_to(backend::Backend* gpu, const std::string& gpu_name, std::vector<Tensor*> order, Model& m,
               const std::function<void(float)>& progress) {
    std::stable_sort(order.begin(), order.end(), [](const Tensor* a, const Tensor* b) { return tensor_bytes(*a) > tensor_bytes(*b); });
    auto form_of = [gpu](const Tensor& t) {
        return gpu_weight_form(t.type, [gpu](uint32_t type) { return gpu->supports_weight_type(type); });
    };
    struct Span {
        const uint8_t* lo;
        const uint8_t* hi;
        uint64_t offset;
        const Tensor* convert;  // uploaded converted to its plain type, or null
    };
    std::vector<Span> spans;
    std::vector<std::pair<Tensor*, int64_t>> placed;  // tensor, span index
    uint64_t total = 0;
    for (Tensor* t : order) {
        const uint8_t* lo = static_cast<const uint8_t*>(t->data);
        const uint8_t* hi = lo + tensor_bytes(*t);
        const bool convert = form_of(*t) != t->type;
        int64_t found = -1;
        for (size_t i = 0; i < spans.size() && found < 0 && !convert; ++i)
            if (!spans[i].convert && lo >= spans[i].lo && hi <= spans[i].hi) found = (int64_t)i;
        if (found < 0) {
            spans.push_back({lo, hi, total, convert ? t : nullptr});
            total += (tensor_bytes(*t) + 255) / 256 * 256;
            found = (int64_t)spans.size() - 1;
        }
        placed.emplace_back(t, found);
    }
    uint64_t gpu_bytes = 0;
    for (const Span& sp : spans) gpu_bytes += (uint64_t)(sp.hi - sp.lo);
    m.device_weight_bytes.push_back(gpu_bytes);
    if (total == 0) return;
    const backend::Capabilities cap = gpu->capabilities();
    std::unique_ptr<backend::Buffer> buf;
    try {
        buf = gpu->alloc(total);
    } catch (const std::bad_alloc&) {
        fail(Status::out_of_memory, gpu_name + ": " + std::to_string(total >> 20) + " MiB of weights do not fit (" +
             std::to_string(cap.memory_free >> 20) + " MiB free): offload fewer layers, keep experts on the CPU "
             "or shift layers to another GPU (see `ikllm plan`)");
    }
    uint8_t* base = static_cast<uint8_t*>(buf->data());
    uint64_t done = 0;
    for (const Span& sp : spans) {
        if (sp.convert) upload_converted(gpu, base + sp.offset, *sp.convert, form_of(*sp.convert));
        else gpu->upload(base + sp.offset, sp.lo, (size_t)(sp.hi - sp.lo));
        done += (uint64_t)(sp.hi - sp.lo);
        progress((float)done / (float)total);
    }
    for (auto& [t, i] : placed) {
        const Span& sp = spans[(size_t)i];
        if (sp.convert) {
            const quant::TypeTraits& to = *quant::find_type(form_of(*t));
            t->stored_type = t->type;
            t->type = to.id;
            t->nb[0] = (size_t)to.block_bytes;  // rows keep their bytes (gpu_weight_form)
            t->host = nullptr;                  // the host bytes are the interleaved form
        } else {
            t->host = t->data;
        }
        t->data = base + sp.offset + (static_cast<const uint8_t*>(t->data) - sp.lo);
    }
    m.buffers.push_back(std::move(buf));
}

}  // namespace

GpuSet available_gpus(backend::Registry* registry, const std::string& tensor_split,
                      std::vector<backend::Backend*>* backends) {
    GpuSet set;
    set.split = parse_tensor_split(tensor_split);
    const bool by_memory = set.split.empty();
    for (int i = 0, n = registry ? registry->gpu_count() : 0; i < n; ++i) {
        backend::Backend* g = registry->gpu(i);
        if (backends) backends->push_back(g);
        const backend::Capabilities cap = g->capabilities();
        set.names.push_back(cap.name);
        if (by_memory) set.split.push_back(cap.memory_free > 0 ? (double)cap.memory_free : 1.0);
    }
    return set;
}

void place_weights(Model& m, const ModelOptions& opts, backend::Registry* registry, const Logger& log,
                   const std::function<void(float)>& check_cancel) {
    m.devices = {m.cpu.get()};
    m.device_names = {"CPU"};
    m.device_weight_bytes = {m.weight_bytes};
    m.layer_attn_device.assign((size_t)m.hp.n_layer, 0);
    const std::vector<PlacementRule> rules = parse_placement_rules(opts.tensor_placement);
    if (opts.n_gpu_layers <= 0 && rules.empty()) return;

    std::vector<backend::Backend*> gpus;
    const GpuSet set = available_gpus(registry, opts.tensor_split, &gpus);
    if (gpus.empty() && registry) m.placement_report.push_back(registry->status());
    const bool have_gpu = !gpus.empty();

    // A tied LM head is placed as a tensor "output.weight" of its own (as the planner counts
    // it): when that lands on a GPU it is a copy of token_embd there (the embedding lookup
    // stays where token_embd is); on the CPU the head is token_embd itself again.
    Tensor* tied_head = nullptr;
    if (have_gpu && m.output == m.tok_embd) {
        auto t = std::make_unique<Tensor>(*m.tok_embd);
        m.derived_names.push_back("output.weight");
        t->name = m.derived_names.back().c_str();
        tied_head = t.get();
        m.output = tied_head;
        m.weights.push_back(std::move(t));
    }

    std::vector<PlacementTensor> list;
    list.reserve(m.weights.size());
    for (auto& t : m.weights) {
        PlacementTensor p;
        p.name = t->name;
        p.layer = layer_of(t->name);
        p.type = t->type;
        p.bytes = tensor_bytes(*t);
        list.push_back(std::move(p));
    }
    PlacementResult res = place_tensors(list, m.hp.n_layer, opts.n_gpu_layers, rules, set, [&](uint32_t type) {
        for (backend::Backend* g : gpus)
            if (!g->supports_weight_type(type)) return false;
        return have_gpu;
    });
    for (std::string& r : res.report) m.placement_report.push_back(std::move(r));
    // Device list: the CPU, then the GPUs holding weights in registry order (the first GPU when
    // none does: sessions may still stream host weights to it).
    std::vector<int> gpu_device(gpus.size(), 0);  // registry index -> index in m.devices
    for (size_t g = 0; g < gpus.size(); ++g) {
        bool holds = false;
        for (const std::string& d : res.device_of) holds |= d == set.names[g];
        if (!holds && !(g == 0 && std::find_if(res.device_of.begin(), res.device_of.end(), [](const std::string& d) {
                                      return d != "CPU";
                                  }) == res.device_of.end()))
            continue;
        gpu_device[g] = (int)m.devices.size();
        m.devices.push_back(gpus[g]);
        m.device_names.push_back(set.names[g]);
    }
    for (size_t i = 0; i < m.weights.size(); ++i) {
        m.weights[i]->device = 0;
        for (size_t g = 0; g < gpus.size(); ++g)
            if (res.device_of[i] == set.names[g]) m.weights[i]->device = gpu_device[g];
    }
    if (tied_head) {
        if (tied_head->device == 0) {
            m.output = m.tok_embd;
            m.weights.erase(std::find_if(m.weights.begin(), m.weights.end(),
                                         [&](const std::unique_ptr<Tensor>& t) { return t.get() == tied_head; }));
            tied_head = nullptr;
        } else {
            m.by_name.emplace("output.weight", tied_head);
        }
    }
    for (const std::string& r : m.placement_report) log.log(log_warn, "placement: %s", r.c_str());
    if (!have_gpu) return;

    m.device_weight_bytes = {0};
    const size_t n_dev = m.devices.size();
    for (size_t d = 1; d < n_dev; ++d) {
        std::vector<Tensor*> order;
        for (auto& t : m.weights)
            if (t->device == (int)d) order.push_back(t.get());
        upload_to(m.devices[d], m.device_names[d], std::move(order), m, [&](float f) {
            check_cancel(0.9f + 0.09f * ((float)(d - 1) + f) / (float)(n_dev - 1));
        });
    }
    // CPU bytes: distinct host spans of the tensors left there.
    {
        std::vector<std::pair<const uint8_t*, const uint8_t*>> cpu_spans;
        for (auto& t : m.weights)
            if (t->device == 0) {
                const uint8_t* lo = static_cast<const uint8_t*>(t->data);
                cpu_spans.emplace_back(lo, lo + tensor_bytes(*t));
            }
        std::sort(cpu_spans.begin(), cpu_spans.end());
        const uint8_t* end = nullptr;
        for (auto& [lo, hi] : cpu_spans) {
            if (end && hi <= end) continue;
            m.device_weight_bytes[0] += (uint64_t)(hi - std::max(lo, end ? end : lo));
            end = hi;
        }
    }
    for (int l = 0; l < m.hp.n_layer; ++l) {
        const LayerWeights& lw = m.layers[(size_t)l];
        const Tensor* a = lw.wk ? lw.wk : lw.wkv_a_mqa ? lw.wkv_a_mqa : lw.wo;
        m.layer_attn_device[(size_t)l] = a ? a->device : 0;
    }
    std::string where;
    for (size_t d = 1; d < m.devices.size(); ++d) {
        char part[96];
        std::snprintf(part, sizeof part, "%.1f MiB on %s, ", m.device_weight_bytes[d] / 1048576.0, m.device_names[d].c_str());
        where += part;
    }
    log.log(log_info, "placement: %s%.1f MiB of weights on CPU", where.c_str(), m.device_weight_bytes[0] / 1048576.0);
}

}  // namespace ikllm
