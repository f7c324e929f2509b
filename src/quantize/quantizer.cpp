#include "quantize/quantizer.h"

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "core/error.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "model/model.h"
#include "quant/type_traits.h"
#include "quantize/imatrix_file.h"

namespace ikllm::quantize {

namespace {

bool is_float_type(uint32_t t) { return t == quant::T_F32 || t == quant::T_F16 || t == quant::T_BF16; }

// Splits [0, n) into contiguous ranges over up to n_threads threads (the caller is one of them).
template <typename F>
void parallel_for(int64_t n, int n_threads, F&& f) {
    const int nt = (int)std::max<int64_t>(1, std::min<int64_t>(n_threads, n));
    if (nt == 1) {
        f(0, n);
        return;
    }
    std::vector<std::thread> threads;
    std::exception_ptr err;
    std::mutex mu;
    auto body = [&](int i) {
        try {
            f(n * i / nt, n * (i + 1) / nt);
        } catch (...) {
            std::lock_guard<std::mutex> lock(mu);
            if (!err) err = std::current_exception();
        }
    };
    for (int i = 1; i < nt; ++i) threads.emplace_back(body, i);
    body(0);
    for (auto& t : threads) t.join();
    if (err) std::rethrow_exception(err);
}

// Converts one tensor: decode each source row group to float, encode into the target type.
void convert(const gguf::TensorInfo& t, uint32_t to, const ImatrixEntry* imat, int n_threads, uint8_t* dst) {
    const quant::TypeTraits& src_t = *quant::find_type(t.type);
    const quant::TypeTraits& dst_t = *quant::find_type(to);
    const int64_t ne0 = t.ne[0], nrows = t.n_rows();
    const int64_t rows_per_matrix = t.ne[1];
    const size_t src_rb = quant::row_bytes(src_t, ne0), dst_rb = quant::row_bytes(dst_t, ne0);
    // Work in units that are whole groups of both the source and the destination interleave.
    const int64_t unit = std::max<int64_t>(src_t.interleave, dst_t.interleave);
    if (nrows % unit) fail(Status::internal, "quantize: row count does not fit the interleave");
    const bool need_ones = !imat && (to == quant::T_IQ2_XXS || to == quant::T_IQ2_XS || to == quant::T_IQ1_S);
    parallel_for(nrows / unit, n_threads, [&](int64_t u0, int64_t u1) {
        std::vector<float> buf((size_t)(unit * ne0));
        std::vector<float> ones(need_ones ? (size_t)ne0 : 0, 1.f);
        for (int64_t u = u0; u < u1; ++u) {
            const int64_t r0 = u * unit;
            for (int64_t g = 0; g < unit; g += src_t.interleave)
                src_t.dequant(t.data + (r0 + g) * src_rb, buf.data() + g * ne0, ne0);
            const float* w = need_ones ? ones.data() : nullptr;
            if (imat) {
                // Expert tensors carry one importance vector per expert (matrix index ne2).
                const int64_t expert = r0 / rows_per_matrix;
                const size_t off = (size_t)expert * (size_t)ne0;
                w = imat->mean_sq.size() >= off + (size_t)ne0 ? imat->mean_sq.data() + off : imat->mean_sq.data();
            }
            for (int64_t g = 0; g < unit; g += dst_t.interleave)
                dst_t.quantize(buf.data() + g * ne0, dst + (r0 + g) * dst_rb, ne0, w);
        }
    });
}

}  // namespace

QuantizeTotals quantize_file(const std::string& in_path, const std::string& out_path, QuantizeParams& params,
                             const ReportFn& report, const Logger& log) {
    if (in_path.empty()) fail(Status::invalid_argument, "quantize: no input file");
    if (out_path.empty() && !params.dry_run) fail(Status::invalid_argument, "quantize: no output file");
    const Preset preset = resolve_preset(params.plan.target);
    Imatrix imatrix;
    if (!params.imatrix_path.empty()) {
        imatrix = load_imatrix(params.imatrix_path);
        params.plan.have_imatrix = true;
    }
    auto in = gguf::File::open(in_path, &type_geometry);
    const std::string arch = in->get_str_or("general.architecture", "");
    const int n_layer = arch.empty() ? 0 : (int)in->get_u32_or(arch + ".block_count", 0);

    std::vector<TensorDesc> descs;
    for (const auto& t : in->tensors()) {
        TensorDesc d;
        d.name = t.name;
        d.type = t.type;
        d.n_dims = t.n_dims;
        std::memcpy(d.ne, t.ne, sizeof d.ne);
        descs.push_back(d);
    }
    const std::vector<TensorChoice> choices = plan(descs, n_layer, params.plan, preset);

    // Input checks before any work: requantization needs consent, imatrix rows must fit.
    for (size_t i = 0; i < descs.size(); ++i) {
        if (!choices[i].quantize) continue;
        const auto& t = in->tensors()[i];
        if (!is_float_type(t.type) && !params.allow_requantize)
            fail(Status::invalid_argument, "tensor '" + t.name + "' is already quantized (" +
                                               quant::find_type(t.type)->name +
                                               "); re-quantizing loses quality: pass --allow-requantize to do it anyway");
        if (!quant::find_type(t.type)->dequant)
            fail(Status::unsupported, "tensor '" + t.name + "': cannot decode its type");
        auto it = imatrix.entries.find(t.name);
        if (it != imatrix.entries.end() && it->second.mean_sq.size() % (size_t)t.ne[0] != 0)
            fail(Status::invalid_argument, "importance matrix entry '" + t.name + "' has " +
                                               std::to_string(it->second.mean_sq.size()) +
                                               " values, not a multiple of the row length " + std::to_string(t.ne[0]));
    }

    gguf::Writer w(in->alignment());
    w.copy_kvs(*in);
    if (preset.file_type || preset.main_type == quant::T_F32) w.set_u32("general.file_type", preset.file_type);
    w.set_u32("general.quantization_version", 2);
    QuantizeTotals tot;
    std::vector<uint64_t> out_bytes(descs.size());
    uint64_t in_total = 0;
    for (size_t i = 0; i < descs.size(); ++i) {
        const auto& t = in->tensors()[i];
        const quant::TypeTraits& tt = *quant::find_type(choices[i].type);
        out_bytes[i] = choices[i].quantize ? quant::row_bytes(tt, t.ne[0]) * (uint64_t)t.n_rows() : t.nbytes;
        std::vector<int64_t> ne(t.ne, t.ne + t.n_dims);
        w.declare_tensor(t.name, choices[i].type, ne, out_bytes[i]);
        in_total += t.nbytes;
    }
    if (!params.dry_run) w.begin(out_path);

    uint64_t done = 0;
    std::vector<uint8_t> buf;
    for (size_t i = 0; i < descs.size(); ++i) {
        const auto& t = in->tensors()[i];
        const TensorChoice& c = choices[i];
        std::string note = c.note;
        if (c.quantize && !is_float_type(t.type)) {
            const std::string warn = std::string("re-quantizing from ") + quant::find_type(t.type)->name;
            note = note.empty() ? warn : note + "; " + warn;
            log.log(log_warn, "%s: %s", t.name.c_str(), warn.c_str());
        }
        const ImatrixEntry* imat = nullptr;
        if (auto it = imatrix.entries.find(t.name); it != imatrix.entries.end()) imat = &it->second;
        if (!params.dry_run) {
            if (c.quantize) {
                buf.resize(out_bytes[i]);
                convert(t, c.type, imat, params.n_threads, buf.data());
                w.write_data(buf.data(), buf.size());
            } else {
                w.write_data(t.data, t.nbytes);
            }
        }
        tot.bytes_before += t.nbytes;
        tot.bytes_after += out_bytes[i];
        tot.n_elements += (uint64_t)t.n_elements();
        (c.quantize ? tot.n_quantized : tot.n_copied)++;
        done += t.nbytes;
        if (report) {
            TensorReport r{t.name.c_str(), t.type, c.type, t.nbytes, out_bytes[i], note.c_str(),
                           in_total ? (float)((double)done / (double)in_total) : 1.f};
            if (!report(r)) fail(Status::cancelled, "quantize cancelled");
        }
    }
    if (!params.dry_run) w.commit();
    return tot;
}

}  // namespace ikllm::quantize
