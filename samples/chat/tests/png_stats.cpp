// png_stats FILE [MIN_STDDEV]: prints the size and the per-channel mean / standard deviation of a
// PNG and exits 1 when the image is blank (standard deviation of all channels below MIN_STDDEV,
// default 8) or unreadable. Used by the GUI tests on screenshots.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <stb_image.h>

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: png_stats FILE [MIN_STDDEV]\n");
        return 2;
    }
    const double min_sd = argc > 2 ? std::atof(argv[2]) : 8.0;
    int w = 0, h = 0, n = 0;
    unsigned char* px = stbi_load(argv[1], &w, &h, &n, 3);
    if (!px) {
        std::fprintf(stderr, "png_stats: cannot read %s: %s\n", argv[1], stbi_failure_reason());
        return 1;
    }
    double sum = 0, sum2 = 0;
    const size_t count = (size_t)w * h * 3;
    for (size_t i = 0; i < count; ++i) {
        sum += px[i];
        sum2 += (double)px[i] * px[i];
    }
    stbi_image_free(px);
    const double mean = sum / count, sd = std::sqrt(std::max(0.0, sum2 / count - mean * mean));
    std::printf("{\"width\": %d, \"height\": %d, \"mean\": %.2f, \"stddev\": %.2f}\n", w, h, mean, sd);
    return sd >= min_sd ? 0 : 1;
}
