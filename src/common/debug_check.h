// Checks too expensive for every build: whole-structure invariant walks
// (SegmentAllocator, ObjectIndex, MasterState::CheckInvariants) at the
// points where a structure was rebuilt or changed in bulk. On where
// MC_DEBUG_CHECKS is defined (the sanitizer build, meson option
// `sanitize`); the release build keeps its plain asserts (b_ndebug=false)
// and skips these, so its figures do not move. A broken invariant prints
// the Status and aborts, like a failed assert.
#pragma once

#ifdef MC_DEBUG_CHECKS
#include <cstdio>
#include <cstdlib>

#define MC_DEBUG_CHECK_OK(expr)                                                        \
  do {                                                                                 \
    const auto mc_debug_check_status = (expr);                                         \
    if (!mc_debug_check_status.ok()) {                                                 \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr,               \
                   mc_debug_check_status.message().c_str());                           \
      std::abort();                                                                    \
    }                                                                                  \
  } while (0)
#else
#define MC_DEBUG_CHECK_OK(expr) \
  do {                          \
  } while (0)
#endif
