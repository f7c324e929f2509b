// CPU matrix-product kernels, one per (weight type, instruction set).
// A matmul W[rows x ne0] * X[nt x ne0]^T -> Y[nt x rows] runs in two phases:
//   1. the activations X (float32) are encoded once into the kernel's activation format
//      (Q8_0, Q8_K, Q8_2_X4, F16 ... see quant-formats.md §15);
//   2. each thread computes a range of weight rows against all encoded activation rows.
// The ISA is picked at run time (best_isa()); tests force each one and compare to scalar.
#pragma once
#include <cstddef>
#include <cstdint>

namespace ikllm::cpu {

enum class Isa : int { scalar = 0, avx2 = 1, avx512 = 2, neon = 3 };
const char* isa_name(Isa isa);
Isa best_isa();  // highest ISA this CPU supports among those compiled in

// How float activations are encoded for a kernel.
struct ActFormat {
    uint32_t id;  // type id of the format (quant::TypeId), T_F32 for plain floats
    size_t (*row_bytes)(int64_t ne0);
    void (*encode_row)(const float* x, uint8_t* out, int64_t ne0);
};

// y[t * y_stride + r] = dot(W row r, X row t) for r in [r0, r1), t in [0, nt).
// r0 and r1 are multiples of the weight type's interleave. `w` points at the matrix's row 0
// (rows are w_row_bytes apart, row groups interleave*w_row_bytes apart); `act` at encoded row 0.
using MatmulFn = void (*)(const uint8_t* w, size_t w_row_bytes, int64_t ne0, int64_t r0, int64_t r1,
                          const uint8_t* act, size_t act_row_bytes, int64_t nt, float* y, int64_t y_stride);

// Prompt-batch (AMX) kernels only: products against activations packed once for several weight
// matrices (amx_pack_rows), e.g. a MoE expert's gate and up.
using PackedMatmulFn = void (*)(const uint8_t* w, size_t w_row_bytes, int64_t ne0, int64_t r0, int64_t r1,
                                const void* packed, int64_t nt, float* y, int64_t y_stride);

struct MatmulKernel {
    uint32_t weight_type;
    Isa isa;
    const ActFormat* act;
    MatmulFn run;
    // The kernel wants every token of a matmul in one call (it re-encodes weights once per call
    // and blocks tokens itself); otherwise callers pass cache-sized token blocks.
    bool whole_batch = false;
    // Prompt-batch (AMX) kernels: fewest tokens of one call for which the kernel beats the
    // standard one (it decodes the weights once per call), used to pick MoE experts' kernels.
    int32_t min_tokens = 0;
    // y as for `run`, the nt tokens packed by amx_pack_rows (null: not a prompt-batch kernel).
    PackedMatmulFn run_packed = nullptr;
};

// Best kernel for `weight_type` not above `max_isa` (falls back to lower ISAs, then to the
// generic dequantize-tile kernel when the type can be dequantized). nullptr: not computable.
const MatmulKernel* find_matmul(uint32_t weight_type, Isa max_isa);
// Exactly this ISA's kernel, or nullptr (used by tests to compare each path).
const MatmulKernel* find_matmul_exact(uint32_t weight_type, Isa isa);

// Prompt batches: batches of kAmxMinTokens tokens or more of a type with a bf16 decoder run on
// the AMX tile unit (bf16 x bf16 -> fp32, kernels/amx_bf16.h) where amx_usable(); otherwise, and
// for smaller batches, this is find_matmul(weight_type, max_isa). The AMX kernels round weights
// and activations to bf16 instead of quantizing activations to 8 bits, so their results differ
// from the VNNI kernels by about the same amount those differ from exact float products.
constexpr int64_t kAmxMinTokens = 64;
const MatmulKernel* find_batch_matmul(uint32_t weight_type, Isa max_isa, int64_t nt);
// The AMX kernel of a type (nullptr: none compiled in or no bf16 decoder), whether or not the
// CPU has the unit (tests check amx_usable() first).
const MatmulKernel* find_amx_matmul(uint32_t weight_type);
// CPU reports AMX-TILE and AMX-BF16, the kernel granted this process the tile data state
// (arch_prctl ARCH_REQ_XCOMP_PERM, asked once), and IKLLM_AMX is not "0".
bool amx_usable();
// Float rows -> the prompt-batch kernels' packed activations (bf16 rounded as act_format_bf16,
// in the tile unit's operand layout): `rows[t]` is token t's row of ne0 floats (ne0 a multiple of
// 32); `out` 64-byte aligned, amx_packed_bytes(ne0, nt) bytes. Only where amx_usable().
size_t amx_packed_bytes(int64_t ne0, int64_t nt);
void amx_pack_rows(const float* const* rows, int64_t ne0, int64_t nt, void* out);

// Highest ISA the CPU and OS support among those compiled in, ignoring IKLLM_ISA.
// best_isa() is this capped by the IKLLM_ISA environment variable (scalar|avx2|avx512|neon).
Isa detected_isa();

// Activation formats shared by many kernels (reference encoders; defined in matmul.cpp).
// Kernels may publish their own ActFormat with the same id and a faster encoder, provided it
// writes identical bytes.
const ActFormat* act_format_f32();      // plain float32 rows (encode = copy)
const ActFormat* act_format_bf16();     // bf16 rows, reference RNE conversion
const ActFormat* act_format_q8_0();     // quant::act_q8_0_encode_row
const ActFormat* act_format_q8_2_x4();  // quant::act_q8_2_x4_encode_row

// Kernel tables published by each kernel source file (see kernels/*.cpp).
struct KernelTable {
    const MatmulKernel* entries;
    size_t count;
};

}  // namespace ikllm::cpu

namespace ikllm::cpu {
// One table per (format family, ISA); each lives in kernels/<family>_<isa>.cpp.
#define IKLLM_KERNEL_FAMILY(fam) \
    KernelTable fam##_kernels_scalar(); KernelTable fam##_kernels_avx2(); KernelTable fam##_kernels_avx512();
IKLLM_KERNEL_FAMILY(float)
IKLLM_KERNEL_FAMILY(legacy)
IKLLM_KERNEL_FAMILY(kquant)
IKLLM_KERNEL_FAMILY(iqk)
IKLLM_KERNEL_FAMILY(grid)
IKLLM_KERNEL_FAMILY(trellis)
IKLLM_KERNEL_FAMILY(ternary)
IKLLM_KERNEL_FAMILY(interleaved)
#undef IKLLM_KERNEL_FAMILY
// AVX2 kernels compiled with AVX-VNNI as well (kernels/<family>_avxvnni.cpp): registered as AVX2
// kernels ahead of the plain ones where the CPU has AVX-VNNI and IKLLM_AVXVNNI is not "0".
KernelTable legacy_kernels_avxvnni();
KernelTable kquant_kernels_avxvnni();
bool avxvnni_usable();
// AArch64 + dot product (kernels/<family>_neon.cpp; empty tables elsewhere). Families without a
// NEON file run their scalar kernels there.
KernelTable float_kernels_neon();
KernelTable legacy_kernels_neon();
KernelTable kquant_kernels_neon();
KernelTable iqk_kernels_neon();
KernelTable grid_kernels_neon();
KernelTable trellis_kernels_neon();
KernelTable amx_kernels();  // kernels/matmul_amx.cpp (empty where AMX is not compiled in)
}  // namespace ikllm::cpu
