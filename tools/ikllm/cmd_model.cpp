// `ikllm info`, `ikllm tokenize`, `ikllm dequant`.
#include <cinttypes>
#include <fstream>
#include <string>

#include "cli.h"

namespace cli {

int cmd_info(int argc, char** argv) {
    Args a = parse(argc, argv, {"--verbose", "--no-mmap", "--mmap"});
    Loaded L;
    load(a, L, "", false, true);
    ikllm_model* m = L.model;
    std::printf("architecture : %s\n", ikllm_model_architecture(m));
    std::printf("name         : %s\n", ikllm_model_name(m));
    std::printf("parameters   : %" PRIu64 " (%.2f M)\n", ikllm_model_n_params(m), ikllm_model_n_params(m) / 1e6);
    std::printf("weights      : %.2f MiB\n", ikllm_model_size_bytes(m) / 1048576.0);
    std::printf("placement    : %s\n", ikllm_model_placement(m));
    std::printf("vocab        : %d\n", ikllm_model_n_vocab(m));
    std::printf("n_ctx_train  : %d\n", ikllm_model_n_ctx_train(m));
    std::printf("n_embd       : %d\n", ikllm_model_n_embd(m));
    std::printf("n_layer      : %d\n", ikllm_model_n_layer(m));
    for (const char* kv : {"f16", "bf16", "q8_0", "f32"}) {
        uint64_t b = 0;
        if (ikllm_model_kv_bytes_per_token(m, kv, &b) == IKLLM_OK)
            std::printf("KV cache %s : %" PRIu64 " bytes/token\n", kv, b);
    }
    std::printf("devices      :");
    for (int32_t d = 0; d < ikllm_model_device_count(m); ++d)
        std::printf("%s %s %.2f MiB", d ? "," : "", ikllm_model_device_name(m, d),
                    ikllm_model_device_weight_bytes(m, d) / 1048576.0);
    std::printf("\n");
    const std::string report = ikllm_model_placement_report(m);
    if (!report.empty()) {
        std::printf("placement report:\n");
        size_t b = 0;
        while (b <= report.size()) {
            size_t e = report.find('\n', b);
            if (e == std::string::npos) e = report.size();
            std::printf("  %s\n", report.substr(b, e - b).c_str());
            b = e + 1;
        }
    }
    std::printf("\nmetadata (%d keys):\n", ikllm_model_meta_count(m));
    std::vector<char> buf(4096);
    for (int32_t i = 0; i < ikllm_model_meta_count(m); ++i) {
        const char* key = ikllm_model_meta_key(m, i);
        size_t need = 0;
        ikllm_status st = ikllm_model_meta_value(m, key, 0, buf.data(), buf.size(), &need);
        if (st == IKLLM_ERR_BUFFER_TOO_SMALL) {
            buf.resize(need);
            st = ikllm_model_meta_value(m, key, 0, buf.data(), buf.size(), &need);
        }
        std::string v = st == IKLLM_OK ? buf.data() : "?";
        if (v.size() > 160) v = v.substr(0, 157) + "...";
        for (char& c : v)
            if (c == '\n') c = ' ';
        std::printf("  %-44s = %s\n", key, v.c_str());
    }
    std::printf("\ntensors (%d):\n", ikllm_model_tensor_count(m));
    std::printf("  %-40s %-10s %-28s %12s %s\n", "name", "type", "shape", "bytes", "device");
    for (int32_t i = 0; i < ikllm_model_tensor_count(m); ++i) {
        const char* name;
        int32_t type;
        int64_t ne[4];
        uint64_t bytes;
        check(ikllm_model_tensor_info(m, i, &name, &type, ne, &bytes), "tensor info");
        char shape[96];
        std::snprintf(shape, sizeof shape, "[%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 "]", ne[0], ne[1], ne[2], ne[3]);
        const char* tn = ikllm_type_name(type);
        int32_t dev = 0;
        const char* dn = ikllm_model_tensor_device(m, name, &dev) == IKLLM_OK ? ikllm_model_device_name(m, dev) : nullptr;
        std::printf("  %-40s %-10s %-28s %12" PRIu64 " %s\n", name, tn ? tn : "?", shape, bytes, dn ? dn : "?");
    }
    return 0;
}

int cmd_tokenize(int argc, char** argv) {
    Args a = parse(argc, argv, {"--no-bos", "--special", "--verbose", "--no-mmap"});
    if (!a.has("-f")) die("tokenize: missing -f TEXT_FILE");
    Loaded L;
    load(a, L, "", true);
    const std::string text = read_file(a.get("-f"));
    uint32_t flags = 0;
    if (!a.has("--no-bos")) flags |= IKLLM_TOKENIZE_ADD_SPECIAL;
    if (a.has("--special")) flags |= IKLLM_TOKENIZE_PARSE_SPECIAL;
    size_t n = 0;
    ikllm_status st = ikllm_tokenize(L.model, text.data(), text.size(), flags, nullptr, 0, &n);
    if (st != IKLLM_OK && st != IKLLM_ERR_BUFFER_TOO_SMALL) check(st, "tokenize");
    std::vector<int32_t> ids(n);
    check(ikllm_tokenize(L.model, text.data(), text.size(), flags, ids.data(), ids.size(), &n), "tokenize");
    for (size_t i = 0; i < n; ++i) std::printf(i ? " %d" : "%d", ids[i]);
    std::printf("\n");
    return 0;
}

int cmd_dequant(int argc, char** argv) {
    Args a = parse(argc, argv, {"--verbose", "--no-mmap", "--mmap"});
    if (!a.has("--tensor") || !a.has("--out")) die("dequant: needs --tensor NAME --out OUT.f32");
    Loaded L;
    load(a, L, "", false, true);
    const std::string name = a.get("--tensor");
    size_t n = 0;
    ikllm_status st = ikllm_model_tensor_dequantize(L.model, name.c_str(), nullptr, 0, &n);
    if (st != IKLLM_ERR_BUFFER_TOO_SMALL) check(st, "dequant");
    std::vector<float> v(n);
    check(ikllm_model_tensor_dequantize(L.model, name.c_str(), v.data(), v.size(), &n), "dequant");
    std::ofstream f(a.get("--out"), std::ios::binary);
    f.write(reinterpret_cast<const char*>(v.data()), (std::streamsize)(v.size() * sizeof(float)));
    if (!f) die("cannot write '" + a.get("--out") + "'");
    return 0;
}

}  // namespace cli
