// Reading a caller's cancel flag (`const volatile int32_t*` in the ABI). Another thread raises
// it while the library runs, so it is read with an atomic load: a plain volatile read would be
// a data race (and is reported as one by ThreadSanitizer). Callers set it with an atomic store.
#pragma once
#include <cstdint>

namespace ikllm {

inline bool cancel_requested(const volatile int32_t* flag) {
    return flag && __atomic_load_n(flag, __ATOMIC_RELAXED) != 0;
}

}  // namespace ikllm
