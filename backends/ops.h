// The op vocabulary shared by graph builders (src/graph) and backends: tensors as views of
// backend memory and a flat list of ops. A builder appends ops for one batch; a backend runs
// a slice of the list. Activations are float32; weights keep their storage type.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ikllm {

// A strided view of up to 4 dims (ne0 fastest). `type` is a quant::TypeId.
struct Tensor {
    uint32_t type = 0;
    int64_t ne[4] = {1, 1, 1, 1};
    size_t nb[4] = {0, 0, 0, 0};  // byte strides; nb[0] = element size for float types
    void* data = nullptr;
    const char* name = "";
    int device = 0;               // index of the backend holding the memory (0 = CPU)
    // Weights held by another device: their bytes in host memory (the file mapping) when
    // still available, for host-side readers (dequantize API, checks); else null.
    const void* host = nullptr;
    // Weights converted for a device (a row-interleaved type uploaded as its plain `type`): the
    // type the file stores, whose products the reference's numerics follow; else 0.
    uint32_t stored_type = 0;

    int64_t n_rows() const { return ne[1] * ne[2] * ne[3]; }
    int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
    template <typename T>
    T* row(int64_t i1, int64_t i2 = 0, int64_t i3 = 0) const {
        return reinterpret_cast<T*>(static_cast<uint8_t*>(data) + i1 * nb[1] + i2 * nb[2] + i3 * nb[3]);
    }
};

enum class RopeMode : int32_t { norm = 0, neox = 2 };

// RoPE parameters after resolving the model's scaling keys (docs: architectures.md §3).
struct RopeParams {
    RopeMode mode = RopeMode::norm;
    int32_t n_dims = 0;        // rotated dims per head
    float freq_base = 10000.f;
    float freq_scale = 1.f;
    float ext_factor = 0.f;
    float attn_factor = 1.f;
    float beta_fast = 32.f;
    float beta_slow = 1.f;
    int32_t n_ctx_orig = 0;
    const float* freq_factors = nullptr;  // n_dims/2 values or null
};

// The KV cells visible to a batch: per cell the position and the sequences holding it.
// Attention masks with it: token t sees cell c iff c holds seq(t) and pos(c) <= pos(t).
struct KvView {
    const int32_t* cell_pos = nullptr;   // [n_cells]
    const uint64_t* cell_seqs = nullptr; // [n_cells * seq_words] bitmask
    int32_t seq_words = 1;
    int32_t n_cells = 0;                 // cells [0, n_cells) are examined
};
// Whether cell c holds a position of sequence seq.
inline bool kv_cell_in_seq(const KvView& kv, int64_t c, int32_t seq) {
    return kv.cell_pos[c] >= 0 && ((kv.cell_seqs[c * kv.seq_words + seq / 64] >> (seq % 64)) & 1u);
}

enum class OpKind : int32_t {
    get_rows,     // dst[:, t] = dequant(src0 row ids[t])            src0 = table, i32 = ids
    rms_norm,     // dst = src0 * inv_rms(src0) * src1 (rows of ne0)  src1 = gain (may be null)
    mul_mat,      // dst[n, t] = src0[n, :] . src1[:, t] (+ src2 bias [n])
    add,          // dst = src0 + src1 (same shapes)
    swiglu,       // dst = silu(src0) * src1
    rope,         // in place on dst [d, heads, tokens] with i32 positions
    kv_store,     // copy src0 [d*heads, tokens] into cache dst rows i32[t] (converting to cache type)
    attention,    // dst [d_v*n_head, tokens] = softmax(q k^T * scale + mask) v
    gather_rows,  // dst[:, j] = src0[:, i32[j]]
    mul_mat_swiglu, // dst = silu(src0 . src1) * (src2 . src1): fused gate/up of a dense FFN
    moe_route,    // src0 router logits [n_expert, T] (+ src1 selection bias) -> dst weights [k, T], aux ids [k, T]
    moe_ffn,      // dst [E, T] = sum_j weight[j,t] * FFN_{ids[j,t]}(src0[:, t]); experts in ex[], ids src1, weights src2
    copy,         // dst = src0 (same shape, strided f32 views)
    mul_mat_heads,// per head h: dst[:, h, t] = src0[:, :, h] . src1[:, h, t]  (3-D weights, one matrix per head)
};

// Short name of an op kind (profiles, messages).
inline const char* op_kind_name(OpKind k) {
    static const char* const names[] = {"get_rows", "rms_norm",  "mul_mat", "add",  "swiglu",       "rope",
                                        "kv_store", "attention", "gather_rows",     "mul_mat_swiglu", "moe_route",
                                        "moe_ffn",  "copy",      "mul_mat_heads"};
    const int i = (int)k;
    return i >= 0 && i < (int)(sizeof names / sizeof *names) ? names[i] : "?";
}

// Routing of a mixture-of-experts layer (docs: architectures.md §7).
enum class MoeGating : int32_t { softmax = 1, sigmoid = 2 };
struct MoeParams {
    int32_t n_used = 0;            // experts per token (k)
    MoeGating gating = MoeGating::softmax;
    bool norm = false;             // renormalise the k weights to sum 1
    float scale = 1.0f;            // multiply the weights (applied when |scale - 1| > 1e-5)
    int32_t ser_max = 0;           // smart expert reduction: keep at most this many (0 = off)
    float ser_frac = 0.0f;         //   and drop experts whose weight < ser_frac * the top weight
    bool round_f16 = false;        // expert weights are F16: round expert inputs to f16 (reference numerics)
};

struct Op {
    OpKind kind = OpKind::add;
    Tensor* dst = nullptr;
    Tensor* src[3] = {nullptr, nullptr, nullptr};
    const int32_t* i32 = nullptr;   // ids / positions / cell indices
    int64_t n_i32 = 0;
    float f[2] = {0, 0};            // eps for rms_norm; scale and scratch bound (MiB, 0 = none) for attention
    RopeParams rope;                // for rope
    // attention: src0 = q [d_k, n_head, T], src1 = K cache [d_k, n_head_kv, cells],
    // src2 = V cache [d_v, n_head_kv, cells]; i32 = positions[T]; seq_ids below.
    const int32_t* seq_ids = nullptr;
    KvView kv;
    // moe_route / moe_ffn: routing parameters; expert weights (gate, up, down; gate may be a
    // merged gate_up tensor with up == null); aux = the second output of moe_route (ids).
    MoeParams moe;
    // matrix products (mul_mat, mul_mat_swiglu, mul_mat_heads, moe_ffn): every token's result must not
    // depend on the other tokens of the batch (session option batch_invariant)
    bool batch_invariant = false;
    Tensor* ex[3] = {nullptr, nullptr, nullptr};
    Tensor* aux = nullptr;
};

// An op list for one batch shape. Tensors are owned by the list (stable addresses).
class Graph {
public:
    Tensor* new_tensor() {
        chunks_.emplace_back();
        return &chunks_.back();
    }
    Op& add(OpKind kind) {
        Op op;
        op.kind = kind;
        ops.push_back(op);
        return ops.back();
    }
    std::vector<Op> ops;
    // Host memory whose contents are dead from op `op` on (an activation pool the builder
    // reuses for a later layer): a scheduler drops what it knows of the range there, so the
    // next writer does not first copy the dead bytes in from another device.
    struct Recycled {
        size_t op;
        const void* data;
        size_t bytes;
    };
    std::vector<Recycled> recycled;

private:
    // deque-like stable storage without pulling in <deque> semantics everywhere
    struct Chunked {
        std::vector<std::vector<Tensor>> blocks;
        size_t used = 0;
        Tensor& emplace_back() {
            if (blocks.empty() || used == blocks.back().size()) {
                blocks.emplace_back();
                blocks.back().reserve(256);
                blocks.back().resize(256);
                used = 0;
            }
            return blocks.back()[used++];
        }
        Tensor& back() { return blocks.back()[used - 1]; }
    } chunks_;
};

}  // namespace ikllm
